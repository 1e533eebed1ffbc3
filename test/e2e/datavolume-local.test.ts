/**
 * DataVolumes on dynamically provisioned volumes in local mode, with the real tiny guest:
 * a VM whose dataVolumeTemplates import the tiny guest's bootable qcow2 over HTTP (a
 * server on loopback) gets its claim provisioned by local mode's provisioner on the
 * project's CSI driver (in-process, pool under the state directory), CDI's importer runs as
 * a local pod process and writes disk.img on the published volume, the DataVolume
 * Succeeds and the guest boots from the claim (boot marker once). Deleting the VM takes
 * the DataVolume, claim, PV and the pool's volume with it; stopping local mode unmounts
 * the pool. Then an online snapshot (the guest frozen through its agent) and a restore,
 * and a Block DataVolume.
 * The local mode, image server and shared steps: local-storage-fixture.ts.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../src/api/generated/types';
import type { LocalNode } from '../../src/cli/local/local-node';
import { statePaths } from '../../src/cli/local/state-dir';
import type { Pod } from '../../src/controllers/common/pod';
import { localCsiProblem } from '../../src/controllers/composition/local-csi/local-csi';
import { podDir } from '../../src/controllers/local/pod-runtime/pod-dirs';
import {
  DataVolumeType,
  PersistentVolumeClaimType,
  PersistentVolumeType,
  PodType,
  VirtualMachineInstanceType,
  VirtualMachineType,
} from '../../src/controllers/runtime/resources';
import {
  VirtualMachineRestoreType,
  VirtualMachineSnapshotType,
  VolumeSnapshotType,
} from '../../src/controllers/runtime/storage-resources';
import type { KubeObject } from '../../src/controllers/runtime/types';
import type { SerialConsole } from '../support/guest';
import { type LocalStorageFixture, NS, startLocalStorage } from './local-storage-fixture';
import { e2eRun, waitFor } from './node-harness';

const run = e2eRun('DataVolumes in local mode', () => localCsiProblem());
const name = `dvl-${process.pid}`;
const dvName = `${name}-root`;

interface Claim extends KubeObject {
  spec?: { volumeName?: string; storageClassName?: string };
  status?: { phase?: string };
}
interface Volume extends KubeObject {
  spec?: { csi?: { driver?: string; volumeHandle?: string }; persistentVolumeReclaimPolicy?: string };
}

describe.runIf(run)('DataVolumes in local mode (real guest, CSI pool)', () => {
  let f: LocalStorageFixture;
  let node: LocalNode;

  beforeAll(async () => {
    f = await startLocalStorage('kvts-dvl-');
    node = f.node;
  }, 60_000);

  afterAll(async () => {
    await f?.stop([name]);
  }, 180_000);

  it('a VM with an http dataVolumeTemplate boots from the provisioned claim; deletion frees the pool', {
    timeout: 600_000,
  }, async () => {
    expect(node.storageStatus).toMatch(/^StorageClass kubevirt-ts-local \(default; CSI driver in-process\)/);
    await node.store.create(VirtualMachineType, f.dvVm(name));

    const dv = await f.succeeded(dvName);
    expect(dv.status?.progress).toBe('100.0%');
    // Streamed (HEADs of the importer and nbdkit, ranged reads), never downloaded whole.
    expect(f.served).toContain('GET /boot.qcow2 bytes=0-5');
    expect(f.served.filter((l) => l === 'HEAD /boot.qcow2').length).toBeGreaterThanOrEqual(2);
    expect(f.served).not.toContain('GET /boot.qcow2');

    // The claim: class kubevirt-ts-local, provisioned by the driver, bound to the sidecar's PV shape.
    const claim = await node.store.get<Claim>(PersistentVolumeClaimType, dvName, NS);
    expect(claim.spec?.storageClassName).toBe('kubevirt-ts-local');
    expect(claim.status?.phase).toBe('Bound');
    expect(claim.metadata?.annotations?.['volume.kubernetes.io/storage-provisioner']).toBe(
      'csi.kubevirt-ts.io',
    );
    const pvName = `pvc-${claim.metadata?.uid}`;
    expect(claim.spec?.volumeName).toBe(pvName);
    const pv = await node.store.get<Volume>(PersistentVolumeType, pvName);
    expect(pv.metadata?.annotations?.['pv.kubernetes.io/provisioned-by']).toBe('csi.kubevirt-ts.io');
    expect(pv.spec?.csi?.driver).toBe('csi.kubevirt-ts.io');
    expect(pv.spec?.persistentVolumeReclaimPolicy).toBe('Delete');
    expect(f.poolVolumes()).toEqual([pv.spec?.csi?.volumeHandle]);

    // The guest booted from the claim's disk.img: its root shell answers.
    expect(await f.onConsole(name, (con) => con.run('echo disk-$((6*7))'))).toContain('disk-42');

    await node.store.delete(VirtualMachineType, name, { namespace: NS });
    await waitFor(
      'the VM, its DataVolume, claim and PV gone, the pool empty',
      async () => {
        const left = [
          ...(await node.store.list(PodType, { namespace: NS })).items,
          ...(await node.store.list(DataVolumeType, { namespace: NS })).items,
          ...(await node.store.list(PersistentVolumeClaimType, { namespace: NS })).items,
          ...(await node.store.list(PersistentVolumeType)).items,
        ];
        return left.length === 0 && f.poolVolumes().length === 0;
      },
      180_000,
    );
  });

  it('an online VirtualMachineSnapshot (the guest frozen through its agent) and its restore bring the disk back (local snapshotter)', {
    timeout: 600_000,
  }, async () => {
    const vmName = `${name}-s`;
    const sector = 81920; // 40 MiB into the disk: past the 14 MiB boot image
    const write = (con: SerialConsole, text: string) =>
      con.run(
        `echo ${text} | dd of=/dev/vda bs=512 seek=${sector} conv=notrunc 2>/dev/null; sync; echo 3 > /proc/sys/vm/drop_caches`,
      );
    const read = (con: SerialConsole) =>
      con.run(`dd if=/dev/vda bs=512 skip=${sector} count=1 2>/dev/null | head -n1`);
    await node.store.create(VirtualMachineType, f.dvVm(vmName));
    await f.succeeded(`${vmName}-root`);
    const vmi = () =>
      node.store
        .get<VirtualMachineInstance & KubeObject>(VirtualMachineInstanceType, vmName, NS)
        .catch(() => undefined);

    const snap = `${vmName}-snap`;
    // One boot: A written, the snapshot taken while the guest runs, B written over A.
    const taken = await f.onConsole(vmName, async (con) => {
      await write(con, 'MARK-A');
      await waitFor(
        'the guest agent connected',
        async () =>
          (await vmi())?.status?.conditions?.some((c) => c.type === 'AgentConnected' && c.status === 'True'),
        180_000,
      );
      await node.store.create(VirtualMachineSnapshotType, {
        apiVersion: 'snapshot.kubevirt.io/v1beta1',
        kind: 'VirtualMachineSnapshot',
        metadata: { name: snap, namespace: NS },
        spec: { source: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: vmName } },
      } as KubeObject);
      const s = await waitFor(
        'the VirtualMachineSnapshot ready',
        async () => {
          const s = await node.store.get<
            KubeObject & { status?: { readyToUse?: boolean; phase?: string; indications?: string[] } }
          >(VirtualMachineSnapshotType, snap, NS);
          if (s.status?.phase === 'Failed') throw new Error(`snapshot failed: ${JSON.stringify(s.status)}`);
          return s.status?.readyToUse && s;
        },
        120_000,
      );
      await write(con, 'MARK-B');
      expect(await read(con)).toContain('MARK-B');
      return s;
    });
    expect(taken.status?.phase).toBe('Succeeded');
    // Frozen through the agent as on a cluster: the launcher logs the agent's freeze, then
    // the unfreeze (the tiny guest mounts no disk filesystem: its agent freezes 0, so the
    // unfreeze finds it thawed and logs `unfroze:`).
    expect(taken.status?.indications).toEqual(['GuestAgent', 'Online']);
    const launcher = (await node.store.list<Pod & KubeObject>(PodType, { namespace: NS })).items.find(
      (p) => p.metadata?.name?.startsWith(`virt-launcher-${vmName}`) && !p.metadata?.deletionTimestamp,
    );
    const log = readFileSync(
      join(podDir(statePaths(f.state).pods, launcher?.metadata?.uid ?? ''), 'compute.log'),
      'utf8',
    );
    expect(log).toMatch(/froze \d+ guest filesystem\(s\)[\s\S]*(thawed \d+ guest filesystem\(s\)|unfroze: )/);
    expect((await vmi())?.status?.fsFreezeStatus).toBeUndefined();
    // The CSI objects of the sidecars' shape, and a reflink copy in the pool.
    const vs = (
      await node.store.list<
        KubeObject & { status?: { boundVolumeSnapshotContentName?: string; readyToUse?: boolean } }
      >(VolumeSnapshotType, { namespace: NS })
    ).items;
    expect(vs).toHaveLength(1);
    expect(vs[0].status?.readyToUse).toBe(true);
    expect(vs[0].status?.boundVolumeSnapshotContentName).toBe(`snapcontent-${vs[0].metadata?.uid}`);
    expect(f.poolSnapshots()).toHaveLength(1);
    await f.setRunning(vmName, false);

    const restore = `${vmName}-restore`;
    await node.store.create(VirtualMachineRestoreType, {
      apiVersion: 'snapshot.kubevirt.io/v1beta1',
      kind: 'VirtualMachineRestore',
      metadata: { name: restore, namespace: NS },
      spec: {
        target: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: vmName },
        virtualMachineSnapshotName: snap,
      },
    } as KubeObject);
    await waitFor(
      'the VirtualMachineRestore complete',
      async () => {
        const r = await node.store.get<KubeObject & { status?: { complete?: boolean } }>(
          VirtualMachineRestoreType,
          restore,
          NS,
        );
        return r.status?.complete === true;
      },
      180_000,
    );
    await f.setRunning(vmName, true);
    const after = await f.onConsole(vmName, read);
    expect(after).toContain('MARK-A');
    expect(after).not.toContain('MARK-B');

    // Everything goes: the VM (its DataVolume and restored claim), the snapshot and restore.
    await node.store.delete(VirtualMachineRestoreType, restore, { namespace: NS });
    await node.store.delete(VirtualMachineSnapshotType, snap, { namespace: NS });
    await node.store.delete(VirtualMachineType, vmName, { namespace: NS });
    await f.nothingLeft();
  });

  it('a Block-mode DataVolume: imported onto the device, the guest boots from it', {
    timeout: 400_000,
  }, async () => {
    const vmName = `${name}-b`;
    await node.store.create(VirtualMachineType, f.dvVm(vmName, 'Block'));
    await f.succeeded(`${vmName}-root`);
    const pv = (await node.store.list<Volume & { spec?: { volumeMode?: string } }>(PersistentVolumeType))
      .items;
    expect(pv.map((v) => v.spec?.volumeMode)).toEqual(['Block']);
    expect(await f.onConsole(vmName, (con) => con.run('echo block-$((6*7))'))).toContain('block-42');
    await node.store.delete(VirtualMachineType, vmName, { namespace: NS });
    await waitFor(
      'the block VM, its claim, PV and volume gone',
      async () =>
        (await node.store.list(PodType, { namespace: NS })).items.length === 0 &&
        (await node.store.list(PersistentVolumeType)).items.length === 0 &&
        f.poolVolumes().length === 0,
      180_000,
    );
  });
});
