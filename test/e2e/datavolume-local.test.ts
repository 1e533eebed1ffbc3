/**
 * DataVolumes on dynamically provisioned volumes in local mode, with the real tiny guest:
 * a VM whose dataVolumeTemplates import the tiny guest's bootable qcow2 over HTTP (a
 * server on loopback) gets its claim provisioned by local mode's provisioner on the
 * project's CSI driver (in-process, pool under the state directory), CDI's importer runs as
 * a local pod process and writes disk.img on the published volume, the DataVolume
 * Succeeds and the guest boots from the claim (boot marker once). Deleting the VM takes
 * the DataVolume, claim, PV and the pool's volume with it; stopping local mode unmounts
 * the pool.
 */
import {
  chmodSync,
  createReadStream,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
} from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataVolume } from '../../src/api/generated/cdi/types';
import type { VirtualMachineInstance } from '../../src/api/generated/types';
import { LocalNode } from '../../src/cli/local/local-node';
import { statePaths } from '../../src/cli/local/state-dir';
import type { Pod } from '../../src/controllers/common/pod';
import { localCsiProblem } from '../../src/controllers/composition/local-csi/local-csi';
import { mountAt } from '../../src/controllers/csi-driver/mounts';
import { CONSOLE_SOCKET, podEmptyDirPath } from '../../src/controllers/launcher-protocol/paths';
import { shortDir } from '../../src/controllers/launcher-protocol/short-dir';
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
  VolumeSnapshotContentType,
  VolumeSnapshotType,
} from '../../src/controllers/runtime/storage-resources';
import type { KubeObject } from '../../src/controllers/runtime/types';
import { BOOT_MARKER, bootDiskPath, SerialConsole } from '../support/guest';
import { e2eRun, waitFor } from './node-harness';

const run = e2eRun('DataVolumes in local mode', () => localCsiProblem());
const NS = 'default';
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
  let state = '';
  let node: LocalNode;
  let server: Server;
  let url = '';
  const served: string[] = [];
  const poolVolumes = () => readdirSync(join(statePaths(state).csi, 'pool', 'volumes'));
  const poolSnapshots = () => readdirSync(join(statePaths(state).csi, 'pool', 'snapshots'));

  /** A VM whose one disk is the DataVolume `<vm>-root` its template imports from the loopback server. */
  const dvVm = (vmName: string, volumeMode?: 'Block') =>
    ({
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachine',
      metadata: { name: vmName, namespace: NS },
      spec: {
        runStrategy: 'Always',
        dataVolumeTemplates: [
          {
            metadata: { name: `${vmName}-root` },
            spec: {
              source: { http: { url: `${url}/boot.qcow2` } },
              storage: {
                ...(volumeMode ? { volumeMode } : {}),
                resources: { requests: { storage: '64Mi' } },
              },
            },
          },
        ],
        template: {
          spec: {
            terminationGracePeriodSeconds: 0,
            domain: {
              devices: {
                autoattachGraphicsDevice: false,
                autoattachPodInterface: false,
                disks: [{ name: 'root', disk: { bus: 'virtio' } }],
              },
              resources: { requests: { memory: '128Mi' } },
            },
            volumes: [{ name: 'root', dataVolume: { name: `${vmName}-root` } }],
          },
        },
      },
    }) as KubeObject;

  /** The VM's DataVolume Succeeded (a failed or retried import throws at once). */
  const succeeded = (dv: string) =>
    waitFor(
      `DataVolume ${dv} Succeeded`,
      async () => {
        const d = await node.store
          .get<DataVolume & KubeObject>(DataVolumeType, dv, NS)
          .catch(() => undefined);
        if (d?.status?.phase === 'Failed' || (d?.status?.restartCount ?? 0) > 0)
          throw new Error(`DataVolume import failed: ${JSON.stringify(d?.status)}`);
        return d?.status?.phase === 'Succeeded' && d;
      },
      300_000,
    );

  /** Waits for the VM's launcher to run and its guest to boot (once); runs `fn` on its console. */
  const onConsole = async <T>(vmName: string, fn: (con: SerialConsole) => Promise<T>): Promise<T> => {
    const pod = await waitFor(
      `the launcher pod of ${vmName} running`,
      async () => {
        const pods = await node.store.list<Pod & KubeObject>(PodType, { namespace: NS });
        return pods.items.find(
          (p) =>
            p.metadata?.name?.startsWith(`virt-launcher-${vmName}`) &&
            p.status?.phase === 'Running' &&
            !p.metadata?.deletionTimestamp,
        );
      },
      180_000,
    );
    const sockets = podEmptyDirPath(statePaths(state).pods, pod.metadata?.uid ?? '', 'sockets');
    const con = await SerialConsole.connect(join(shortDir(sockets), CONSOLE_SOCKET), 120_000);
    try {
      await con.waitFor(BOOT_MARKER, 240_000);
      const out = await fn(con);
      expect(con.output.split(BOOT_MARKER).length).toBe(2);
      return out;
    } finally {
      con.close();
    }
  };

  /** Sets the VM's runStrategy (virtctl start/stop) and, stopping, waits for its pods to go. */
  const setRunning = async (vmName: string, running: boolean) => {
    const vm = await node.store.get<KubeObject & { spec: { runStrategy?: string } }>(
      VirtualMachineType,
      vmName,
      NS,
    );
    await node.store.update(VirtualMachineType, {
      ...vm,
      spec: { ...vm.spec, runStrategy: running ? 'Always' : 'Halted' },
    });
    if (!running)
      await waitFor(
        `${vmName} stopped`,
        async () =>
          !(await node.store.list(PodType, { namespace: NS })).items.some((p) =>
            p.metadata?.name?.startsWith(`virt-launcher-${vmName}`),
          ),
        120_000,
      );
  };

  beforeAll(async () => {
    state = mkdtempSync(join(tmpdir(), 'kvts-dvl-'));
    chmodSync(state, 0o755);
    server = createServer((req, res) => {
      served.push(req.url ?? '');
      if (req.url !== '/boot.qcow2') {
        res.writeHead(404).end();
        return;
      }
      res.writeHead(200, { 'content-length': statSync(bootDiskPath).size });
      createReadStream(bootDiskPath).pipe(res);
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    node = new LocalNode({
      paths: statePaths(state),
      podNetwork: false,
      log: process.env.KUBEVIRT_TS_NODE_LOG ? (c, m) => console.log(`${c}: ${m}`) : undefined,
    });
    await node.start();
  }, 60_000);

  afterAll(async () => {
    await node?.store.delete(VirtualMachineType, name, { namespace: NS }).catch(() => undefined);
    const gone = await waitFor(
      'pods and volumes to go',
      async () =>
        (await node.store.list(PodType, { namespace: NS })).items.length === 0 &&
        (await node.store.list(PersistentVolumeType)).items.length === 0,
      120_000,
    ).catch(() => false);
    // Guests outlive local mode: a failed run must not leave its launchers behind.
    if (!gone) node?.runtime.killAll();
    await node?.stop();
    server?.close();
    const poolDir = join(statePaths(state).csi, 'pool');
    // Stopped with no volume left: the pool is unmounted, so removing the state is safe.
    expect(await mountAt(poolDir)).toBeUndefined();
    if (state && !(await mountAt(poolDir))) rmSync(state, { recursive: true, force: true });
  }, 180_000);

  it('a VM with an http dataVolumeTemplate boots from the provisioned claim; deletion frees the pool', {
    timeout: 600_000,
  }, async () => {
    expect(node.storageStatus).toMatch(/^StorageClass kubevirt-ts-local \(default; CSI driver in-process\)/);
    await node.store.create(VirtualMachineType, dvVm(name));

    const dv = await waitFor(
      `DataVolume ${dvName} Succeeded`,
      async () => {
        const d = await node.store
          .get<DataVolume & KubeObject>(DataVolumeType, dvName, NS)
          .catch(() => undefined);
        if (d?.status?.phase === 'Failed' || (d?.status?.restartCount ?? 0) > 0)
          throw new Error(`DataVolume import failed: ${JSON.stringify(d?.status)}`);
        return d?.status?.phase === 'Succeeded' && d;
      },
      300_000,
    );
    expect(dv.status?.progress).toBe('100.0%');
    expect(served).toContain('/boot.qcow2');

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
    expect(poolVolumes()).toEqual([pv.spec?.csi?.volumeHandle]);

    // The guest booted from the claim's disk.img: its root shell answers.
    expect(await onConsole(name, (con) => con.run('echo disk-$((6*7))'))).toContain('disk-42');

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
        return left.length === 0 && poolVolumes().length === 0;
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
    await node.store.create(VirtualMachineType, dvVm(vmName));
    await succeeded(`${vmName}-root`);

    const snap = `${vmName}-snap`;
    // One boot: A written, the snapshot taken while the guest runs, B written over A.
    const taken = await onConsole(vmName, async (con) => {
      await write(con, 'MARK-A');
      await waitFor(
        'the guest agent connected',
        async () =>
          (
            await node.store
              .get<VirtualMachineInstance & KubeObject>(VirtualMachineInstanceType, vmName, NS)
              .catch(() => undefined)
          )?.status?.conditions?.some((c) => c.type === 'AgentConnected' && c.status === 'True'),
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
    // Frozen through the agent as on a cluster (the launcher logs the agent's freeze and thaw).
    expect(taken.status?.indications).toEqual(['GuestAgent', 'Online']);
    const launcher = (await node.store.list<Pod & KubeObject>(PodType, { namespace: NS })).items.find(
      (p) => p.metadata?.name?.startsWith(`virt-launcher-${vmName}`) && !p.metadata?.deletionTimestamp,
    );
    const log = readFileSync(
      join(podDir(statePaths(state).pods, launcher?.metadata?.uid ?? ''), 'compute.log'),
      'utf8',
    );
    // (The tiny guest mounts no disk filesystem: its agent freezes 0, so the unfreeze finds it thawed.)
    expect(log).toMatch(/froze \d+ guest filesystem\(s\)[\s\S]*(thawed \d+ guest filesystem\(s\)|unfroze: )/);
    expect(
      (await node.store.get<VirtualMachineInstance & KubeObject>(VirtualMachineInstanceType, vmName, NS))
        .status?.fsFreezeStatus,
    ).toBeUndefined();
    // The CSI objects of the sidecars' shape, and a reflink copy in the pool.
    const vs = (
      await node.store.list<
        KubeObject & { status?: { boundVolumeSnapshotContentName?: string; readyToUse?: boolean } }
      >(VolumeSnapshotType, { namespace: NS })
    ).items;
    expect(vs).toHaveLength(1);
    expect(vs[0].status?.readyToUse).toBe(true);
    expect(vs[0].status?.boundVolumeSnapshotContentName).toBe(`snapcontent-${vs[0].metadata?.uid}`);
    expect(poolSnapshots()).toHaveLength(1);
    await setRunning(vmName, false);

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
    await setRunning(vmName, true);
    const after = await onConsole(vmName, read);
    expect(after).toContain('MARK-A');
    expect(after).not.toContain('MARK-B');

    // Everything goes: the VM (its DataVolume and restored claim), the snapshot and restore.
    await node.store.delete(VirtualMachineRestoreType, restore, { namespace: NS });
    await node.store.delete(VirtualMachineSnapshotType, snap, { namespace: NS });
    await node.store.delete(VirtualMachineType, vmName, { namespace: NS });
    await waitFor(
      'claims, volumes, snapshots and the pool empty',
      async () => {
        const left = [
          ...(await node.store.list(PodType, { namespace: NS })).items,
          ...(await node.store.list(PersistentVolumeClaimType, { namespace: NS })).items,
          ...(await node.store.list(PersistentVolumeType)).items,
          ...(await node.store.list(VolumeSnapshotType, { namespace: NS })).items,
          ...(await node.store.list(VolumeSnapshotContentType)).items,
        ];
        return left.length === 0 && poolVolumes().length === 0 && poolSnapshots().length === 0;
      },
      180_000,
    );
  });

  it('a Block-mode DataVolume: imported onto the device, the guest boots from it', {
    timeout: 400_000,
  }, async () => {
    const vmName = `${name}-b`;
    await node.store.create(VirtualMachineType, dvVm(vmName, 'Block'));
    await succeeded(`${vmName}-root`);
    const pv = (await node.store.list<Volume & { spec?: { volumeMode?: string } }>(PersistentVolumeType))
      .items;
    expect(pv.map((v) => v.spec?.volumeMode)).toEqual(['Block']);
    expect(await onConsole(vmName, (con) => con.run('echo block-$((6*7))'))).toContain('block-42');
    await node.store.delete(VirtualMachineType, vmName, { namespace: NS });
    await waitFor(
      'the block VM, its claim, PV and volume gone',
      async () =>
        (await node.store.list(PodType, { namespace: NS })).items.length === 0 &&
        (await node.store.list(PersistentVolumeType)).items.length === 0 &&
        poolVolumes().length === 0,
      180_000,
    );
  });
});
