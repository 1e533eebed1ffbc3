/**
 * The NetworkAttachmentDefinitions a VMI's multus networks name. Upstream's template
 * service reads each one while rendering the launcher pod (multus.GetNetworkToResourceMap)
 * and fails the render with "failed to locate network attachment definition ns/name": the
 * VMI keeps no pod, its Synchronized condition and a FailedCreate event say why, and a
 * definition created later lets the next sync render it.
 */
import type { VirtualMachineInstance } from '../../../api/generated/types';
import type { Lister } from '../../common/controller-ports';
import { isSecondaryMultus, nadNamespacedName } from '../../common/multus';

/** core fields of a NetworkAttachmentDefinition the components read. */
export interface NetworkAttachmentDefinition {
  metadata?: { name?: string; namespace?: string; annotations?: Record<string, string> };
  spec?: { config?: string };
}

/** `ns/name` of every definition the VMI's multus networks (default one included) name. */
export function networkAttachmentKeys(vmi: VirtualMachineInstance): string[] {
  const ns = vmi.metadata?.namespace ?? '';
  return (vmi.spec.networks ?? [])
    .filter((n) => n.multus && (isSecondaryMultus(n) || n.multus.default))
    .map((n) => {
      const nad = nadNamespacedName(ns, n.multus?.networkName ?? '');
      return `${nad.namespace}/${nad.name}`;
    });
}

/** Upstream's render error for the first definition not in `nads`, else undefined. */
export function missingNetworkAttachment(
  vmi: VirtualMachineInstance,
  nads: Lister<NetworkAttachmentDefinition>,
): string | undefined {
  const key = networkAttachmentKeys(vmi).find((k) => !nads.get(k));
  return key === undefined ? undefined : `failed to locate network attachment definition ${key}`;
}
