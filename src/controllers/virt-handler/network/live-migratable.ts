/**
 * Whether a VMI's networks let it live-migrate (upstream's virt-handler
 * isLiveMigratable network check): the bridge binding on the pod network hands the pod's
 * address to the guest, which a target pod with another address cannot keep, so it is not
 * migratable unless the VMI carries upstream's opt-in annotation.
 */
import type { VirtualMachineInstance, VirtualMachineInstanceCondition } from '../../../api/generated/types';
import { podNetworkInterfaces } from '../../common/network-cache';

/** Upstream's annotation allowing migration of a VMI with a bridge binding on the pod network. */
export const ALLOW_POD_BRIDGE_MIGRATION = 'kubevirt.io/allow-pod-bridge-network-live-migration';

/** The LiveMigratable=False condition the networks cause, or undefined when they allow it. */
export function networkNotMigratable(
  vmi: VirtualMachineInstance,
): VirtualMachineInstanceCondition | undefined {
  if (vmi.metadata?.annotations?.[ALLOW_POD_BRIDGE_MIGRATION] !== undefined) return undefined;
  if (!podNetworkInterfaces(vmi).some(({ iface }) => iface.bridge)) return undefined;
  return {
    type: 'LiveMigratable',
    status: 'False',
    reason: 'InterfaceNotLiveMigratable',
    message: `cannot migrate VMI which does not use masquerade, bridge with ${ALLOW_POD_BRIDGE_MIGRATION} VM annotation or a migratable plugin to connect to the pod network`,
  };
}
