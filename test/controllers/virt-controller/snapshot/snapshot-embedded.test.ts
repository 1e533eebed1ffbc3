/**
 * VirtualMachineSnapshot, its content and VirtualMachineRestore on the embedded store with
 * the virt-controller and the node simulator; the test plays the CSI side (binds claims,
 * gives VolumeSnapshots a creationTime and readyToUse) so each step is observed.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type {
  VirtualMachine,
  VirtualMachineInstance,
  VirtualMachineRestore,
  VirtualMachineSnapshot,
  VirtualMachineSnapshotContent,
} from '../../../../src/api/generated/types';
import { VmiResource } from '../../../../src/controllers/common/vmi-resource';
import { PersistentVolumeClaimType, VirtualMachineType } from '../../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../../src/controllers/runtime/types';
import {
  type Pvc,
  snapshotTypes,
  VirtualMachineRestoreType,
  VirtualMachineSnapshotContentType,
  VirtualMachineSnapshotType,
  type VolumeSnapshot,
  VolumeSnapshotType,
} from '../../../../src/controllers/virt-controller/snapshot/resources';
import { SOURCE_FINALIZER } from '../../../../src/controllers/virt-controller/snapshot/source';
import { type Harness, startHarness, waitFor } from '../services/embedded-harness';
import { createBoundClaim, createSnapshotStorageClasses } from './storage-fixture';

const NS = 'default';
type K<T> = T & KubeObject;

function vm(name: string, running: boolean): VirtualMachine {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    metadata: { name, namespace: NS },
    spec: {
      runStrategy: running ? 'Always' : 'Halted',
      template: {
        spec: {
          domain: {
            devices: {
              disks: [
                { name: 'root', disk: { bus: 'virtio' } },
                { name: 'data', disk: { bus: 'virtio' } },
                { name: 'scratch', disk: { bus: 'virtio' } },
              ],
            },
            resources: { requests: { memory: '64Mi' } },
          },
          volumes: [
            { name: 'root', containerDisk: { image: 'example/tiny:latest' } },
            { name: 'data', persistentVolumeClaim: { claimName: `${name}-data` } },
            { name: 'scratch', persistentVolumeClaim: { claimName: `${name}-scratch` } },
          ],
        },
      },
    },
  } as VirtualMachine;
}

describe('VM snapshots and restores on the embedded store', () => {
  let h: Harness;
  const frozen: string[] = [];
  afterEach(async () => {
    await h?.stop();
    frozen.length = 0;
  });

  async function start() {
    h = await startHarness({
      volumes: true,
      snapshots: true,
      types: [...snapshotTypes],
      freezer: {
        freeze: async (ns, name, ms) => {
          frozen.push(`freeze ${ns}/${name} ${ms}`);
        },
        unfreeze: async (ns, name) => {
          frozen.push(`unfreeze ${ns}/${name}`);
        },
      },
    });
    // kubevirt-ts-local has a VolumeSnapshotClass (same driver); "plain" has none.
    await createSnapshotStorageClasses(h.store);
  }

  const claim = (name: string, sc: string) => createBoundClaim(h.store, NS, name, sc);

  async function makeVm(name: string, running: boolean) {
    await claim(`${name}-data`, 'local');
    await claim(`${name}-scratch`, 'plain');
    await h.store.create(VirtualMachineType, vm(name, running) as never);
    if (running) await waitFor('VMI running', async () => (await getVmi(name))?.status?.phase === 'Running');
  }

  const getVm = (n: string) => h.store.get<K<VirtualMachine>>(VirtualMachineType, n, NS);
  const getVmi = (n: string) =>
    h.store.get<K<VirtualMachineInstance>>(VmiResource, n, NS).catch(() => undefined);
  const getSnap = (n: string) => h.store.get<K<VirtualMachineSnapshot>>(VirtualMachineSnapshotType, n, NS);
  const volumeSnapshots = async () =>
    (await h.store.list<K<VolumeSnapshot>>(VolumeSnapshotType, { namespace: NS })).items;

  async function snapshot(name: string, source: string, extra: Record<string, unknown> = {}) {
    await h.store.create(VirtualMachineSnapshotType, {
      apiVersion: 'snapshot.kubevirt.io/v1beta1',
      kind: 'VirtualMachineSnapshot',
      metadata: { name, namespace: NS },
      spec: { source: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: source }, ...extra },
    } as never);
  }

  /** The CSI side: the VolumeSnapshot is cut (creationTime), then ready. */
  async function csiSnapshot(vs: K<VolumeSnapshot>, ready: boolean) {
    const cur = await h.store.get<K<VolumeSnapshot>>(VolumeSnapshotType, vs.metadata!.name!, NS);
    await h.store.updateStatus(VolumeSnapshotType, {
      ...cur,
      status: { creationTime: '2026-12-04T12:00:00Z', readyToUse: ready, restoreSize: '1Gi' },
    } as never);
  }

  async function takeOffline(name: string) {
    await snapshot(`${name}-snap`, name);
    const vs = await waitFor('one VolumeSnapshot', async () => {
      const l = await volumeSnapshots();
      return l.length === 1 ? l[0] : undefined;
    });
    await csiSnapshot(vs, true);
    return waitFor('snapshot Succeeded', async () => {
      const s = await getSnap(`${name}-snap`);
      return s.status?.phase === 'Succeeded' && s.status.readyToUse ? s : undefined;
    });
  }

  it('snapshots a stopped VM: locks it, one VolumeSnapshot per claim with a snapshot class, lists the rest as excluded, unlocks', async () => {
    await start();
    await makeVm('v1', false);
    await snapshot('v1-snap', 'v1');
    const locked = await waitFor('VM locked', async () => {
      const v = await getVm('v1');
      return v.status?.snapshotInProgress === 'v1-snap' ? v : undefined;
    });
    expect(locked.metadata?.finalizers).toContain(SOURCE_FINALIZER);
    const vs = await waitFor('one VolumeSnapshot', async () => {
      const l = await volumeSnapshots();
      return l.length === 1 ? l[0] : undefined;
    });
    const snap0 = await getSnap('v1-snap');
    expect(vs.metadata?.name).toBe(`vmsnapshot-${snap0.metadata?.uid}-volume-data`);
    expect(vs.spec).toEqual({
      source: { persistentVolumeClaimName: 'v1-data' },
      volumeSnapshotClassName: 'local-snap',
    });
    expect(vs.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: 'VirtualMachineSnapshotContent',
      controller: true,
    });
    expect(snap0.status?.phase).toBe('InProgress');
    expect(snap0.status?.conditions?.find((c) => c.type === 'Progressing')).toMatchObject({
      status: 'True',
      reason: 'Source locked and operation in progress',
    });
    await csiSnapshot(vs, false);
    const done = await waitFor('Succeeded', async () => {
      const s = await getSnap('v1-snap');
      return s.status?.phase === 'Succeeded' ? s : undefined;
    });
    expect(done.status?.readyToUse).toBe(false);
    await csiSnapshot(vs, true);
    const ready = await waitFor('ready', async () => {
      const s = await getSnap('v1-snap');
      return s.status?.readyToUse ? s : undefined;
    });
    expect(ready.status?.snapshotVolumes).toEqual({
      includedVolumes: ['data'],
      excludedVolumes: ['root', 'scratch'],
    });
    expect(ready.status?.indications).toEqual(['PartialSnapshot']);
    expect(ready.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'True',
      reason: 'Ready',
    });
    expect(ready.status?.sourceUID).toBe(locked.metadata?.uid);
    const content = await h.store.get<K<VirtualMachineSnapshotContent>>(
      VirtualMachineSnapshotContentType,
      ready.status!.virtualMachineSnapshotContentName!,
      NS,
    );
    expect(content.spec.source.virtualMachine?.spec?.template?.spec?.volumes).toHaveLength(3);
    expect(
      content.spec.volumeBackups?.map((b) => [b.volumeName, b.persistentVolumeClaim.metadata?.name]),
    ).toEqual([['data', 'v1-data']]);
    const unlocked = await waitFor('VM unlocked', async () => {
      const v = await getVm('v1');
      return v.status?.snapshotInProgress === undefined && !v.metadata?.finalizers?.includes(SOURCE_FINALIZER)
        ? v
        : undefined;
    });
    expect(unlocked.status?.snapshotInProgress).toBeUndefined();
    expect(frozen).toEqual([]);
  });

  it('freezes a running VM with a guest agent before the VolumeSnapshot and thaws it once cut, before ready', async () => {
    await start();
    await makeVm('v2', true);
    const vmi = (await getVmi('v2'))!;
    await h.store.updateStatus(VmiResource, {
      ...vmi,
      status: {
        ...vmi.status,
        conditions: [...(vmi.status?.conditions ?? []), { type: 'AgentConnected', status: 'True' }],
      },
    } as never);
    await snapshot('v2-snap', 'v2', { failureDeadline: '2m0s' });
    const vs = await waitFor('VolumeSnapshot', async () => (await volumeSnapshots())[0]);
    expect(frozen).toEqual(['freeze default/v2 120000']);
    const inProgress = await getSnap('v2-snap');
    expect(inProgress.status?.indications).toEqual(['GuestAgent', 'Online']);
    expect(inProgress.status?.sourceIndications?.map((i) => i.indication)).toEqual(['GuestAgent', 'Online']);
    await csiSnapshot(vs, false);
    await waitFor('thawed', async () => frozen.length === 2);
    expect(frozen[1]).toBe('unfreeze default/v2');
    expect((await getSnap('v2-snap')).status?.readyToUse).not.toBe(true);
  });

  it('a running VM without a guest agent: NoGuestAgent, not frozen', async () => {
    await start();
    await makeVm('v3', true);
    await snapshot('v3-snap', 'v3');
    const vs = await waitFor('VolumeSnapshot', async () => (await volumeSnapshots())[0]);
    await waitFor('indications', async () =>
      (await getSnap('v3-snap')).status?.indications?.includes('NoGuestAgent'),
    );
    await csiSnapshot(vs, true);
    const s = await waitFor('ready', async () => {
      const x = await getSnap('v3-snap');
      return x.status?.readyToUse ? x : undefined;
    });
    expect(s.status?.indications).toEqual(['NoGuestAgent', 'Online', 'PartialSnapshot']);
    expect(frozen).toEqual([]);
  });

  it('fails past its failureDeadline with the reason and leaves no VolumeSnapshot and no content behind', async () => {
    await start();
    await makeVm('v4', false);
    await snapshot('v4-snap', 'v4', { failureDeadline: '2s' });
    await waitFor('VolumeSnapshot', async () => (await volumeSnapshots())[0]);
    const failed = await waitFor(
      'Failed',
      async () => {
        const s = await getSnap('v4-snap');
        return s.status?.phase === 'Failed' ? s : undefined;
      },
      10_000,
    );
    expect(failed.status?.conditions?.find((c) => c.type === 'Failure')).toMatchObject({
      status: 'True',
      reason: 'snapshot deadline exceeded',
    });
    await waitFor('VolumeSnapshot gone', async () => (await volumeSnapshots()).length === 0);
    await waitFor(
      'content gone',
      async () =>
        (await h.store.list(VirtualMachineSnapshotContentType, { namespace: NS })).items.length === 0,
    );
    await waitFor('VM unlocked', async () => (await getVm('v4')).status?.snapshotInProgress === undefined);
  });

  async function restore(name: string, target: string, snap: string, extra: Record<string, unknown> = {}) {
    await h.store.create(VirtualMachineRestoreType, {
      apiVersion: 'snapshot.kubevirt.io/v1beta1',
      kind: 'VirtualMachineRestore',
      metadata: { name, namespace: NS },
      spec: {
        target: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: target },
        virtualMachineSnapshotName: snap,
        ...extra,
      },
    } as never);
    return waitFor(
      `restore ${name} complete`,
      async () => {
        const r = await h.store.get<K<VirtualMachineRestore>>(VirtualMachineRestoreType, name, NS);
        if (r.status?.conditions?.some((c) => c.type === 'Failure')) return r;
        return r.status?.complete ? r : undefined;
      },
      10_000,
    );
  }

  it('restores to the same stopped VM (RandomizeNames), InPlace, and to a new VM', async () => {
    await start();
    await makeVm('v5', false);
    await takeOffline('v5');
    const r = await restore('r1', 'v5', 'v5-snap');
    const uid = r.metadata?.uid;
    expect(r.status?.restores).toEqual([
      {
        volumeName: 'data',
        persistentVolumeClaim: `restore-${uid}-data`,
        volumeSnapshotName: expect.stringMatching(/^vmsnapshot-.*-volume-data$/),
      },
    ]);
    const pvc = await h.store.get<K<Pvc>>(PersistentVolumeClaimType, `restore-${uid}-data`, NS);
    expect(pvc.spec?.dataSource).toEqual({
      apiGroup: 'snapshot.storage.k8s.io',
      kind: 'VolumeSnapshot',
      name: r.status!.restores![0]!.volumeSnapshotName,
    });
    expect(pvc.spec?.storageClassName).toBe('local');
    expect(pvc.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'VirtualMachine', name: 'v5' });
    const v = await getVm('v5');
    expect(
      v.spec.template.spec?.volumes?.find((x) => x.name === 'data')?.persistentVolumeClaim?.claimName,
    ).toBe(`restore-${uid}-data`);
    expect(
      v.spec.template.spec?.volumes?.find((x) => x.name === 'scratch')?.persistentVolumeClaim?.claimName,
    ).toBe('v5-scratch');
    expect(v.metadata?.annotations?.['restore.kubevirt.io/lastRestoreUID']).toBe(`r1-${uid}`);
    expect(v.status?.restoreInProgress).toBeUndefined();
    expect(r.status?.conditions?.find((c) => c.type === 'Ready')).toMatchObject({
      status: 'True',
      reason: 'Operation complete',
    });

    // InPlace: the claim keeps its name and is recreated from the VolumeSnapshot.
    const oldUid = (await h.store.get<K<Pvc>>(PersistentVolumeClaimType, `restore-${uid}-data`, NS)).metadata
      ?.uid;
    await takeOffline2('v5', 'v5-snap2');
    const r2 = await restore('r2', 'v5', 'v5-snap2', { volumeRestorePolicy: 'InPlace' });
    expect(r2.status?.restores?.[0]?.persistentVolumeClaim).toBe(`restore-${uid}-data`);
    const again = await h.store.get<K<Pvc>>(PersistentVolumeClaimType, `restore-${uid}-data`, NS);
    expect(again.metadata?.uid).not.toBe(oldUid);
    expect(again.spec?.dataSource?.name).toBe(r2.status!.restores![0]!.volumeSnapshotName);

    // A new VM, PrefixTargetName.
    const r3 = await restore('r3', 'v5-copy', 'v5-snap', { volumeRestorePolicy: 'PrefixTargetName' });
    expect(r3.status?.restores?.[0]?.persistentVolumeClaim).toBe('v5-copy-data');
    const copy = await getVm('v5-copy');
    expect(copy.spec.runStrategy).toBe('Halted');
    expect(
      copy.spec.template.spec?.volumes?.find((x) => x.name === 'data')?.persistentVolumeClaim?.claimName,
    ).toBe('v5-copy-data');
    const copyPvc = await h.store.get<K<Pvc>>(PersistentVolumeClaimType, 'v5-copy-data', NS);
    expect(copyPvc.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: 'VirtualMachine',
      name: 'v5-copy',
      uid: copy.metadata?.uid,
    });
  });

  async function takeOffline2(vmName: string, snapName: string) {
    // The CSI side binds the restored claims.
    for (const c of (await h.store.list<K<Pvc>>(PersistentVolumeClaimType, { namespace: NS })).items)
      if (c.status?.phase !== 'Bound')
        await h.store.updateStatus(PersistentVolumeClaimType, { ...c, status: { phase: 'Bound' } } as never);
    const before = new Set((await volumeSnapshots()).map((v) => v.metadata?.name));
    await snapshot(snapName, vmName);
    const vs = await waitFor('new VolumeSnapshot', async () =>
      (await volumeSnapshots()).find((v) => !before.has(v.metadata?.name)),
    );
    await csiSnapshot(vs, true);
    await waitFor('ready', async () => (await getSnap(snapName)).status?.readyToUse);
  }

  it('a running target: FailImmediate fails the restore; StopTarget stops it and restores', async () => {
    await start();
    await makeVm('v6', true);
    await takeOffline('v6');
    const r = await restore('r-fail', 'v6', 'v6-snap', { targetReadinessPolicy: 'FailImmediate' });
    expect(r.status?.complete).toBe(false);
    expect(r.status?.conditions?.find((c) => c.type === 'Failure')).toMatchObject({
      status: 'True',
      reason: 'Restore target VMI must be powered off before restore operation',
    });
    const r2 = await restore('r-stop', 'v6', 'v6-snap', { targetReadinessPolicy: 'StopTarget' });
    expect(r2.status?.complete).toBe(true);
    const v = await getVm('v6');
    expect(v.spec.runStrategy).toBe('Halted');
    expect(await getVmi('v6')).toBeUndefined();
  });
});
