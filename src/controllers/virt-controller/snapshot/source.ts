/**
 * A VirtualMachine as a snapshot's source (upstream pkg/storage/snapshot/source.go): its
 * state (online, paused, guest agent, frozen), the lock (`status.snapshotInProgress` and
 * the source-protection finalizer) that keeps it from being started, stopped or changed in
 * its volumes while the snapshot is taken, the claims of its volumes, and the freeze and
 * thaw of its filesystems through the guest agent.
 */
import type {
  VirtualMachine,
  VirtualMachineInstance,
  VirtualMachineSnapshot,
} from '../../../api/generated/types';
import type { Lister } from '../../common/controller-ports';
import { VirtualMachineType } from '../../runtime/resources';
import type { ObjectClient } from '../../runtime/types';
import type { Pvc } from './resources';

/** The finalizer a locked source VM carries. */
export const SOURCE_FINALIZER = 'snapshot.kubevirt.io/snapshot-source-protection';

/** Freezes and thaws a running VMI's filesystems (virt-api's freeze/unfreeze subresources). */
export interface VmiFreezer {
  freeze(namespace: string, name: string, unfreezeTimeoutMs: number): Promise<void>;
  unfreeze(namespace: string, name: string): Promise<void>;
}

/** The claim names of a VM's PVC and DataVolume volumes, by volume name (hotplugged ones too). */
export function claimsByVolume(vm: VirtualMachine): Map<string, string> {
  const out = new Map<string, string>();
  for (const v of vm.spec.template.spec?.volumes ?? []) {
    if (v.persistentVolumeClaim) out.set(v.name, v.persistentVolumeClaim.claimName);
    else if (v.dataVolume) out.set(v.name, v.dataVolume.name);
  }
  return out;
}

/** The source's state as read from the caches. */
export interface SourceState {
  online: boolean;
  paused: boolean;
  guestAgent: boolean;
  frozen: boolean;
  locked: boolean;
  lockMsg: string;
}

/** Reads `vm`'s state for `snapshot`. */
export function sourceState(
  vm: VirtualMachine,
  vmi: VirtualMachineInstance | undefined,
  snapshot: VirtualMachineSnapshot,
): SourceState {
  const cond = (t: string) => vmi?.status?.conditions?.find((c) => c.type === t);
  const locked =
    vm.status?.snapshotInProgress === snapshot.metadata?.name &&
    (vm.metadata?.finalizers ?? []).includes(SOURCE_FINALIZER);
  return {
    online: vmi !== undefined,
    paused: cond('Paused')?.status === 'True',
    guestAgent: cond('AgentConnected') !== undefined && cond('AgentConnected')?.status !== 'False',
    frozen: vmi?.status?.fsFreezeStatus === 'frozen',
    locked,
    lockMsg: locked ? 'Source locked and operation in progress' : 'Source not locked',
  };
}

export interface LockDeps {
  client: ObjectClient;
  claims: Lister<Pvc>;
  /** Pods (other than a running VMI's) using any of these claims in the namespace. */
  podsUsingClaims: (namespace: string, claims: string[]) => number;
}

/**
 * Locks `vm` for `snapshot` when its volumes are ready: every claim exists, is bound and
 * not being deleted; an offline VM has no pod still using them; no other snapshot holds it.
 * Returns the locked VM, or undefined with the reason added to `state.lockMsg`.
 */
export async function lockSource(
  d: LockDeps,
  vm: VirtualMachine,
  snapshot: VirtualMachineSnapshot,
  state: SourceState,
): Promise<VirtualMachine | undefined> {
  if (state.locked) return vm;
  const ns = vm.metadata?.namespace ?? '';
  const src = `${ns}/${vm.metadata?.name}`;
  const names = [...new Set(claimsByVolume(vm).values())];
  for (const n of names) {
    const c = d.claims.get(`${ns}/${n}`);
    const why = !c
      ? 'volume doesnt exist'
      : c.metadata?.deletionTimestamp
        ? 'volume is being deleted'
        : c.status?.phase !== 'Bound'
          ? 'volume not bound'
          : undefined;
    if (why) {
      state.lockMsg += ` source ${src} ${why}: ${n}`;
      return undefined;
    }
  }
  if (!state.online) {
    const pods = d.podsUsingClaims(ns, names);
    if (pods > 0) {
      state.lockMsg += ` source is offline but ${pods} pods using PVCs [${names.join(' ')}]`;
      return undefined;
    }
  }
  const holder = vm.status?.snapshotInProgress;
  if (holder && holder !== snapshot.metadata?.name) {
    state.lockMsg += ` snapshot ${JSON.stringify(holder)} in progress`;
    return undefined;
  }
  let cur = vm;
  if (!holder) {
    cur = await d.client.updateStatus<VirtualMachine & { metadata: object }>(VirtualMachineType, {
      ...cur,
      metadata: cur.metadata ?? {},
      status: { ...(cur.status ?? {}), snapshotInProgress: snapshot.metadata?.name },
    });
  }
  if (!(cur.metadata?.finalizers ?? []).includes(SOURCE_FINALIZER)) {
    cur = await d.client.update<VirtualMachine & { metadata: object }>(VirtualMachineType, {
      ...cur,
      metadata: { ...cur.metadata, finalizers: [...(cur.metadata?.finalizers ?? []), SOURCE_FINALIZER] },
    });
  }
  state.locked = true;
  state.lockMsg = 'Source locked and operation in progress';
  return cur;
}

/** Releases `snapshot`'s lock on `vm` (finalizer, then `status.snapshotInProgress`). */
export async function unlockSource(
  client: ObjectClient,
  vm: VirtualMachine,
  snapshot: VirtualMachineSnapshot,
): Promise<boolean> {
  if (vm.status?.snapshotInProgress !== snapshot.metadata?.name) return false;
  let cur = vm;
  const f = cur.metadata?.finalizers ?? [];
  if (f.includes(SOURCE_FINALIZER)) {
    cur = await client.update<VirtualMachine & { metadata: object }>(VirtualMachineType, {
      ...cur,
      metadata: { ...cur.metadata, finalizers: f.filter((x) => x !== SOURCE_FINALIZER) },
    });
  }
  const status = { ...(cur.status ?? {}) };
  delete status.snapshotInProgress;
  await client.updateStatus(VirtualMachineType, { ...cur, metadata: cur.metadata ?? {}, status });
  return true;
}
