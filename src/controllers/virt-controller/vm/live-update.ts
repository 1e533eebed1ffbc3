/**
 * The VM controller's live updates of a running VMI (upstream's LiveUpdate rollout
 * strategy): declarative hotplug volumes (./hotplug-volumes), CPU sockets (./cpu-hotplug),
 * node selector, affinity and tolerations (./placement-update), guest memory
 * (./memory-hotplug), NICs on multus networks (./interface-hotplug), and the decision
 * that whatever else changed in the template needs a restart, with why.
 */
import { FeatureGate } from '../../../api/config/feature-gates';
import type { VirtualMachine, VirtualMachineInstance } from '../../../api/generated/types';
import type { InstancetypeCatalog } from '../../../api/instancetype/catalog';
import { VmiResource } from '../../common/vmi-resource';
import { ConflictError, InvalidError, NotFoundError } from '../../runtime/errors';
import { sameJson } from '../../runtime/same-json';
import type { JsonPatchOp } from '../../runtime/types';
import type { VmControllerDeps } from './controller';
import { cpuChange, withoutLiveCpu } from './cpu-hotplug';
import { declarativeVolumePatch, withoutHotplugVolumes } from './hotplug-volumes';
import { interfaceChange, withoutHotplugInterfaces } from './interface-hotplug';
import { memoryChange, withoutLiveMemory } from './memory-hotplug';
import { placementChange, withoutLivePlacement } from './placement-update';
import { VM_GENERATION_ANNOTATION } from './vmi-template';

/** A live update that has to wait, surfaced as the VM's Failure condition with its reason (upstream's). */
export class LiveUpdateError extends Error {
  override readonly name = 'LiveUpdateError';
  constructor(
    readonly reason: string,
    message: string,
  ) {
    super(message);
  }
}

type BuildVmi = (
  vm: VirtualMachine,
  paused: boolean,
  catalog: InstancetypeCatalog | undefined,
) => { vmi?: VirtualMachineInstance; errors: string[] };

/** Live updates of one VM controller. */
export class LiveUpdates {
  constructor(
    private readonly d: Pick<VmControllerDeps, 'client' | 'config' | 'onWrite'>,
    private readonly build: BuildVmi,
  ) {}

  private wanted(vm: VirtualMachine, vmi: VirtualMachineInstance, catalog: InstancetypeCatalog | undefined) {
    return this.build(vm, vmi.spec.startStrategy === 'Paused', catalog).vmi;
  }

  /** DeclarativeHotplugVolumes (not with the imperative HotplugVolumes gate, as upstream). */
  async syncVolumes(vm: VirtualMachine, vmi: VirtualMachineInstance): Promise<void> {
    const config = this.d.config();
    if (
      config.isFeatureGateEnabled(FeatureGate.HotplugVolumes) ||
      !config.isFeatureGateEnabled(FeatureGate.DeclarativeHotplugVolumes)
    )
      return;
    const ops = declarativeVolumePatch(vm, vmi);
    if (ops) await this.patch(vmi, ops as JsonPatchOp[], 'update');
  }

  /**
   * CPU, memory and NIC hotplug under LiveUpdate (./cpu-hotplug, ./memory-hotplug,
   * ./interface-hotplug): the template's new sockets, then its placement
   * (./placement-update), then its new guest memory, then its interfaces, onto the running
   * VMI (one patch a sync: the patched VMI brings it back), unless the VM
   * needs (or already waits for) a restart. A change that must
   * wait is a sync error, retried, as upstream's.
   */
  async syncCpus(
    vm: VirtualMachine,
    vmi: VirtualMachineInstance,
    catalog: InstancetypeCatalog | undefined,
  ): Promise<void> {
    if (this.d.config().vmRolloutStrategy !== 'LiveUpdate') return;
    if (vmi.status?.phase !== 'Running' || vmi.metadata?.deletionTimestamp) return;
    if ((vm.status?.conditions ?? []).some((c) => c.type === 'RestartRequired' && c.status === 'True'))
      return;
    if (this.restartRequired(vm, vmi, catalog)) return;
    const wanted = this.wanted(vm, vmi, catalog);
    if (!wanted) return;
    const change = cpuChange(wanted, vmi);
    if (change.wait)
      throw new LiveUpdateError(
        'HotPlugCPUError',
        `Error encountered while handling CPU change request: ${change.wait}`,
      );
    if (change.patch) return this.patch(vmi, change.patch, 'patch');
    const placement = placementChange(wanted, vmi);
    if (placement.wait) throw new LiveUpdateError(placement.wait.reason, placement.wait.message);
    if (placement.patch) return this.patch(vmi, placement.patch, 'patch');
    const memory = memoryChange(wanted, vmi);
    if (memory.wait)
      throw new LiveUpdateError(
        'HotPlugMemoryError',
        `error encountered while handling memory hotplug requests: ${memory.wait}`,
      );
    if (memory.patch) return this.patch(vmi, memory.patch, 'patch');
    const nic = interfaceChange(wanted, vmi);
    if (nic.wait)
      throw new LiveUpdateError(
        'HotPlugNetworkInterfaceError',
        `error encountered when trying to patch vmi: ${nic.wait}`,
      );
    if (nic.patch) await this.patch(vmi, nic.patch, 'patch');
  }

  /**
   * Why the running VMI needs a restart for the template to apply, or undefined: the
   * template changed since the VMI was created from it (defaulted specs differ) in what
   * cannot be updated live.
   */
  restartRequired(
    vm: VirtualMachine,
    vmi: VirtualMachineInstance | undefined,
    catalog: InstancetypeCatalog | undefined,
  ): string | undefined {
    if (!vmi || vmi.metadata?.deletionTimestamp) return undefined;
    if (vmi.metadata?.annotations?.[VM_GENERATION_ANNOTATION] === String(vm.metadata?.generation ?? 1))
      return undefined;
    let wanted = this.wanted(vm, vmi, catalog);
    if (!wanted) return undefined;
    if (this.d.config().vmRolloutStrategy === 'LiveUpdate') {
      // CPU sockets go live (./cpu-hotplug) unless that change says why not.
      const cpu = cpuChange(wanted, vmi);
      if (cpu.restart) return cpu.restart;
      const memory = memoryChange(wanted, vmi);
      if (memory.restart) return memory.restart;
      const nic = interfaceChange(wanted, vmi);
      if (nic.restart) return nic.restart;
      wanted = withoutLivePlacement(withoutLiveMemory(vm, withoutLiveCpu(vm, wanted, vmi), vmi), vmi);
    }
    // Hotplug volumes reach the running VMI live (./hotplug-volumes), and under LiveUpdate
    // hotplugged NICs (./interface-hotplug): no restart for them.
    const [a, b] =
      this.d.config().vmRolloutStrategy === 'LiveUpdate'
        ? withoutHotplugInterfaces(wanted.spec, vmi.spec)
        : [wanted.spec, vmi.spec];
    const same = sameJson(
      { ...withoutHotplugVolumes(a), startStrategy: undefined },
      { ...withoutHotplugVolumes(b), startStrategy: undefined },
    );
    return same ? undefined : 'a non-live-updatable field was changed in the template spec';
  }

  private async patch(
    vmi: VirtualMachineInstance,
    ops: JsonPatchOp[],
    verb: 'update' | 'patch',
  ): Promise<void> {
    try {
      await this.d.client.patch(VmiResource, vmi.metadata?.name ?? '', ops, {
        namespace: vmi.metadata?.namespace,
        type: 'json',
      });
      this.d.onWrite?.('VirtualMachineInstance', verb);
    } catch (err) {
      // A newer VMI (the test op failed) comes through the informer and is looked at again.
      if (err instanceof ConflictError || err instanceof NotFoundError || err instanceof InvalidError) return;
      throw err;
    }
  }
}
