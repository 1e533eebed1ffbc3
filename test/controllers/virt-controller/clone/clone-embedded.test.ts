/**
 * VirtualMachineClone on the embedded store with the virt-controller's snapshot, restore
 * and clone controllers; the test plays the CSI side (cuts VolumeSnapshots, binds claims)
 * so each phase is observed: the temporary snapshot and restore, the patched target, the
 * cleanup, and the failure paths.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type {
  VirtualMachine,
  VirtualMachineClone,
  VirtualMachineRestore,
  VirtualMachineSnapshot,
} from '../../../../src/api/generated/types';
import { PersistentVolumeClaimType, VirtualMachineType } from '../../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../../src/controllers/runtime/types';
import {
  type Pvc,
  snapshotTypes,
  VirtualMachineCloneType,
  VirtualMachineRestoreType,
  VirtualMachineSnapshotType,
  type VolumeSnapshot,
  VolumeSnapshotType,
} from '../../../../src/controllers/virt-controller/snapshot/resources';
import { type Harness, startHarness, waitFor } from '../services/embedded-harness';
import { createBoundClaim, createSnapshotStorageClasses } from '../snapshot/storage-fixture';

const NS = 'default';
type K<T> = T & KubeObject;

function vm(name: string, extraVolume = false): VirtualMachine {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    metadata: {
      name,
      namespace: NS,
      labels: { app: 'web', 'kubevirt.io/tier': 'gold', 'team.example/owner': 'a' },
      annotations: { note: 'keep', 'drop.example/x': 'y' },
    },
    spec: {
      runStrategy: 'Halted',
      template: {
        metadata: { labels: { app: 'web', 'kubevirt.io/domain': name } },
        spec: {
          domain: {
            firmware: { serial: 'source-serial', uuid: '5f0f3a0e-0000-4000-8000-000000000001' },
            devices: {
              disks: [{ name: 'data', disk: { bus: 'virtio' } }],
              interfaces: [
                { name: 'default', masquerade: {}, macAddress: '02:00:00:00:00:01' },
                { name: 'second', bridge: {}, macAddress: '02:00:00:00:00:02' },
              ],
            },
            resources: { requests: { memory: '64Mi' } },
          },
          networks: [
            { name: 'default', pod: {} },
            { name: 'second', multus: { networkName: 'net2' } },
          ],
          volumes: [
            { name: 'data', persistentVolumeClaim: { claimName: `${name}-data` } },
            ...(extraVolume
              ? [{ name: 'scratch', persistentVolumeClaim: { claimName: `${name}-scratch` } }]
              : []),
          ],
        },
      },
    },
  } as VirtualMachine;
}

describe('VM clones on the embedded store (snapshot + restore)', () => {
  let h: Harness;
  afterEach(async () => {
    await h?.stop();
  });

  async function start() {
    h = await startHarness({ volumes: true, snapshots: true, types: [...snapshotTypes] });
    await createSnapshotStorageClasses(h.store);
  }

  const claim = (name: string, sc: string) => createBoundClaim(h.store, NS, name, sc);

  async function makeVm(name: string, extraVolume = false) {
    await claim(`${name}-data`, 'local');
    if (extraVolume) await claim(`${name}-scratch`, 'plain');
    await h.store.create(VirtualMachineType, vm(name, extraVolume) as never);
  }

  async function clone(name: string, spec: Record<string, unknown>) {
    await h.store.create(VirtualMachineCloneType, {
      apiVersion: 'clone.kubevirt.io/v1beta1',
      kind: 'VirtualMachineClone',
      metadata: { name, namespace: NS },
      spec,
    } as never);
  }
  const getClone = (n: string) => h.store.get<K<VirtualMachineClone>>(VirtualMachineCloneType, n, NS);
  const cloneIn = (n: string, phase: string) =>
    waitFor(`clone ${n} ${phase}`, async () => {
      const c = await getClone(n);
      return c.status?.phase === phase ? c : undefined;
    });
  const exists = (t: typeof VirtualMachineType, n: string) =>
    h.store.get(t, n, NS).then(
      () => true,
      () => false,
    );

  /** The CSI side: every VolumeSnapshot not yet ready is cut and ready. */
  async function cutSnapshots() {
    const l = await waitFor('a VolumeSnapshot', async () => {
      const all = (await h.store.list<K<VolumeSnapshot>>(VolumeSnapshotType, { namespace: NS })).items;
      const todo = all.filter((v) => !v.status?.readyToUse);
      return todo.length ? todo : undefined;
    });
    for (const vs of l)
      await h.store.updateStatus(VolumeSnapshotType, {
        ...vs,
        status: { creationTime: '2026-12-04T12:00:00Z', readyToUse: true, restoreSize: '1Gi' },
      } as never);
  }
  /** The CSI side: claims bind (the target's claims bind when it first starts, on a WFFC class). */
  async function bindClaims() {
    for (const c of (await h.store.list<K<Pvc>>(PersistentVolumeClaimType, { namespace: NS })).items)
      if (c.status?.phase !== 'Bound')
        await h.store.updateStatus(PersistentVolumeClaimType, { ...c, status: { phase: 'Bound' } } as never);
  }

  it('clones a VM: snapshot, restore to a new VM with new MACs and serial, filters and patches, then cleans up', async () => {
    await start();
    await makeVm('src');
    await clone('c1', {
      source: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'src' },
      target: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'dst' },
      newMacAddresses: { default: '02:00:00:aa:bb:cc' },
      newSMBiosSerial: 'clone-serial',
      labelFilters: ['*', '!kubevirt.io/*'],
      annotationFilters: ['note'],
      template: { labelFilters: ['app', '!kubevirt.io/domain'] },
      patches: ['{"op":"add","path":"/metadata/labels/cloned","value":"yes"}'],
    });
    const c0 = await cloneIn('c1', 'SnapshotInProgress');
    const snapName = `tmp-snapshot-${c0.metadata?.uid}`;
    await waitFor(
      'status.snapshotName',
      async () => (await getClone('c1')).status?.snapshotName === snapName,
    );
    const snap = await h.store.get<K<VirtualMachineSnapshot>>(VirtualMachineSnapshotType, snapName, NS);
    expect(snap.spec.source).toEqual({ apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'src' });
    expect(snap.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: 'VirtualMachineClone',
      name: 'c1',
      controller: true,
    });
    expect((await getClone('c1')).status?.conditions).toEqual([
      expect.objectContaining({ type: 'Progressing', status: 'True', reason: 'Still processing' }),
      expect.objectContaining({ type: 'Ready', status: 'False', reason: 'Still processing' }),
    ]);

    await cutSnapshots();
    const done = await cloneIn('c1', 'Succeeded');
    const restoreName = `tmp-restore-${c0.metadata?.uid}`;
    expect(done.status).toMatchObject({ targetName: 'dst', snapshotName: snapName, restoreName });
    expect(done.status?.conditions).toEqual([
      expect.objectContaining({ type: 'Progressing', status: 'False', reason: 'Ready' }),
      expect.objectContaining({ type: 'Ready', status: 'True', reason: 'Ready' }),
    ]);
    const r = await h.store.get<K<VirtualMachineRestore>>(VirtualMachineRestoreType, restoreName, NS);
    expect(r.spec.target).toEqual({ apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'dst' });
    expect(r.spec.virtualMachineSnapshotName).toBe(snapName);

    const dst = await h.store.get<K<VirtualMachine>>(VirtualMachineType, 'dst', NS);
    const t = dst.spec.template.spec!;
    expect(t.domain.devices.interfaces).toEqual([
      { name: 'default', masquerade: {}, macAddress: '02:00:00:aa:bb:cc' },
      { name: 'second', bridge: {} },
    ]);
    expect(t.domain.firmware).toEqual({ serial: 'clone-serial' });
    expect(dst.metadata?.labels).toEqual({ app: 'web', 'team.example/owner': 'a', cloned: 'yes' });
    expect(dst.metadata?.annotations?.note).toBe('keep');
    expect(dst.metadata?.annotations?.['drop.example/x']).toBeUndefined();
    expect(dst.spec.template.metadata?.labels).toEqual({ app: 'web' });
    expect(dst.spec.runStrategy).toBe('Halted');
    const claimName = r.status?.restores?.[0]?.persistentVolumeClaim ?? '';
    expect(claimName).toBe(`restore-${r.metadata?.uid}-data`);
    expect(t.volumes?.[0]).toEqual({ name: 'data', persistentVolumeClaim: { claimName } });
    const pvc = await h.store.get<K<Pvc>>(PersistentVolumeClaimType, claimName, NS);
    expect(pvc.spec?.dataSource).toMatchObject({ kind: 'VolumeSnapshot' });
    // The source is untouched.
    const src = await h.store.get<K<VirtualMachine>>(VirtualMachineType, 'src', NS);
    expect(src.spec.template.spec?.domain.firmware?.serial).toBe('source-serial');
    expect(src.spec.template.spec?.domain.devices.interfaces?.[0]?.macAddress).toBe('02:00:00:00:00:01');

    // Until the target's claim binds, the temporary objects stay; then they go.
    expect(await exists(VirtualMachineRestoreType, restoreName)).toBe(true);
    await bindClaims();
    const clean = await waitFor('snapshot and restore names cleared', async () => {
      const c = await getClone('c1');
      return c.status?.snapshotName === undefined && c.status?.restoreName === undefined ? c : undefined;
    });
    expect(clean.status?.phase).toBe('Succeeded');
    await waitFor('the restore deleted', async () => !(await exists(VirtualMachineRestoreType, restoreName)));
    await waitFor('the snapshot deleted', async () => !(await exists(VirtualMachineSnapshotType, snapName)));
    expect(h.errors.filter((e) => e.startsWith('vmclone'))).toEqual([]);

    // A finished clone whose target is deleted goes too (upstream's).
    await h.store.delete(VirtualMachineType, 'dst', { namespace: NS });
    await waitFor('the clone deleted', async () => !(await exists(VirtualMachineCloneType, 'c1')));
  });

  it('clones from a VirtualMachineSnapshot without taking one, keeps the source snapshot, and clears what is not given', async () => {
    await start();
    await makeVm('src2');
    await h.store.create(VirtualMachineSnapshotType, {
      apiVersion: 'snapshot.kubevirt.io/v1beta1',
      kind: 'VirtualMachineSnapshot',
      metadata: { name: 'golden', namespace: NS },
      spec: { source: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'src2' } },
    } as never);
    await cutSnapshots();
    await waitFor(
      'golden ready',
      async () =>
        (await h.store.get<K<VirtualMachineSnapshot>>(VirtualMachineSnapshotType, 'golden', NS)).status
          ?.readyToUse,
    );
    await clone('c2', {
      source: { apiGroup: 'snapshot.kubevirt.io', kind: 'VirtualMachineSnapshot', name: 'golden' },
      target: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'dst2' },
    });
    const done = await cloneIn('c2', 'Succeeded');
    expect(done.status?.snapshotName).toBeUndefined();
    const dst = await h.store.get<K<VirtualMachine>>(VirtualMachineType, 'dst2', NS);
    // No new MACs or serial given: cleared, so the target derives its own.
    expect(dst.spec.template.spec?.domain.devices.interfaces).toEqual([
      { name: 'default', masquerade: {} },
      { name: 'second', bridge: {} },
    ]);
    expect(dst.spec.template.spec?.domain.firmware).toEqual({});
    // No filters: labels and annotations kept.
    expect(dst.metadata?.labels).toEqual(vm('x').metadata?.labels);
    await bindClaims();
    await waitFor(
      'restore name cleared',
      async () => (await getClone('c2')).status?.restoreName === undefined,
    );
    expect(await exists(VirtualMachineSnapshotType, 'golden')).toBe(true);
  });

  it('waits for a missing source (Pending), then proceeds when it appears', async () => {
    await start();
    await clone('c3', {
      source: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'later' },
      target: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'dst3' },
    });
    const c = await waitFor('pending', async () => {
      const x = await getClone('c3');
      return x.status?.conditions?.length ? x : undefined;
    });
    expect(c.status?.phase).toBeUndefined();
    expect(c.status?.conditions).toEqual([
      expect.objectContaining({ type: 'Progressing', status: 'False', reason: 'Pending' }),
      expect.objectContaining({
        type: 'Ready',
        status: 'False',
        reason: 'Source doesnt exist: VirtualMachine default/later',
      }),
    ]);
    await makeVm('later');
    await cloneIn('c3', 'SnapshotInProgress');
  });

  it('fails when the snapshot leaves out a claim-backed volume (no snapshot class for it)', async () => {
    await start();
    await makeVm('src4', true);
    await clone('c4', {
      source: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'src4' },
      target: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'dst4' },
    });
    const c0 = await cloneIn('c4', 'SnapshotInProgress');
    await cutSnapshots();
    const failed = await cloneIn('c4', 'Failed');
    expect(failed.status?.conditions).toEqual([
      expect.objectContaining({ type: 'Progressing', status: 'False', reason: 'Failed' }),
      expect.objectContaining({
        type: 'Ready',
        status: 'False',
        reason: `volume scratch is not backed up in snapshot tmp-snapshot-${c0.metadata?.uid}`,
      }),
    ]);
    expect(await exists(VirtualMachineType, 'dst4')).toBe(false);
    expect(await exists(VirtualMachineRestoreType, `tmp-restore-${c0.metadata?.uid}`)).toBe(false);
  });

  it('fails when the temporary snapshot fails', async () => {
    await start();
    await makeVm('src5');
    await clone('c5', {
      source: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'src5' },
      target: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'dst5' },
    });
    const c0 = await cloneIn('c5', 'SnapshotInProgress');
    const snapName = `tmp-snapshot-${c0.metadata?.uid}`;
    const s = await waitFor('the snapshot', () =>
      h.store.get<K<VirtualMachineSnapshot>>(VirtualMachineSnapshotType, snapName, NS).catch(() => undefined),
    );
    // Marked failed as a deadline would (the snapshot controller's own path is tested there).
    await h.store.updateStatus(VirtualMachineSnapshotType, {
      ...s,
      status: { ...s.status, phase: 'Failed' },
    } as never);
    const failed = await cloneIn('c5', 'Failed');
    expect(failed.status?.conditions?.find((x) => x.type === 'Ready')?.reason).toBe(
      `snapshot ${snapName} failed`,
    );
  });

  it('a target VM that already exists: the clone waits in RestoreInProgress, its restore says why', async () => {
    await start();
    await makeVm('src6');
    await makeVm('taken');
    await clone('c6', {
      source: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'src6' },
      target: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'taken' },
    });
    const c0 = await cloneIn('c6', 'SnapshotInProgress');
    await cutSnapshots();
    await cloneIn('c6', 'RestoreInProgress');
    const r = await waitFor('the restore refusing', async () => {
      const x = await h.store
        .get<K<VirtualMachineRestore>>(VirtualMachineRestoreType, `tmp-restore-${c0.metadata?.uid}`, NS)
        .catch(() => undefined);
      return x?.status?.conditions?.find(
        (c) => c.type === 'Ready' && c.reason !== 'Initializing VirtualMachineRestore',
      );
    });
    expect(r.reason).toBe(
      'restore source and restore target are different but restore target already exists',
    );
    expect((await getClone('c6')).status?.phase).toBe('RestoreInProgress');
  });
});
