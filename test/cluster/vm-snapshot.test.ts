/**
 * Issue 27 on the real one-node cluster: a VM whose second disk is a CSI PVC
 * (kubevirt-ts-local, through the project's driver and the real csi-provisioner,
 * csi-snapshotter and snapshot-controller as host processes, test/cluster/csi-sidecars.ts)
 * is snapshotted while running with its guest agent connected (frozen through virt-api's
 * freeze, thawed once the CSI VolumeSnapshot is cut), then restored after the guest
 * overwrote the disk: started again, the guest reads what it wrote before the snapshot.
 * The components run as pods from the project's images (test/support/cluster-install.ts).
 * The guest writes its markers to the raw disk (/dev/vdb; the busybox guest formats no
 * filesystem), the disk's image is `disk.img` on the claim's filesystem volume.
 *
 * The driver's one name registers once with a kubelet, these files also install and
 * delete the snapshot CRDs, and this one installs and removes the components: it takes
 * the host locks for its whole run (test/support/host-lock.ts; two at once failed each
 * other in a full run).
 */
import { type CoreV1Api, type CustomObjectsApi, Watch } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClusterInfo } from '../../scripts/cluster/state';
import type { VirtualMachine, VirtualMachineInstance } from '../../src/api/generated/types';
import { LOCAL_CLASS } from '../../src/controllers/csi-driver/objects';
import { KubeClient } from '../../src/controllers/runtime/kube/client';
import { VirtualMachineType } from '../../src/controllers/runtime/resources';
import { kubectlExecAsync } from '../support/cluster-pods';
import type { SerialConsole } from '../support/guest';
import { waitFor } from '../support/wait';
import { csiClusterTestsEnabled } from './csi-stack';
import { storageClusterFixture } from './storage-cluster';
import {
  benchLine,
  CONTENT_TYPE_ANNOTATION,
  DATA_DISK,
  exportFigures,
  exportReferenceLine,
  figures,
  freezeWindow,
  POOL_BYTES,
  SNAPSHOT_BENCH,
} from './vm-snapshot-bench';
import { cloneStoppedVm } from './vm-snapshot-clone';

const enabled = csiClusterTestsEnabled('VM snapshots');
const NS = 'cluster-vm-snapshot';
const VM = 'vm-snap';
const MARKER = 'KUBEVIRT-TS-GUEST-BOOTED';
const KV = { group: 'kubevirt.io', version: 'v1', namespace: NS };
const SNAPKV = { group: 'snapshot.kubevirt.io', version: 'v1beta1', namespace: NS };

describe.skipIf(!enabled)('VM snapshot and restore on the real cluster (CSI VolumeSnapshots)', () => {
  const fx = storageClusterFixture({
    namespace: NS,
    tmpPrefix: 'kvts-vm-snapshot-',
    snapshots: true,
    poolBytes: POOL_BYTES,
  });
  let info: ClusterInfo;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  const show = <T>(what: string, f: () => Promise<T | undefined>, ms = 180_000) =>
    waitFor(what, f, ms, 500).catch((e) => {
      throw new Error(`${e}\n${fx.csi?.sidecars.logs()}`);
    });

  beforeAll(async () => {
    await fx.setUp();
    ({ info, core, custom } = fx);
  }, 1_200_000);
  afterAll(() => fx.tearDown(), 400_000);

  const readVm = async (name = VM) =>
    (await custom.getNamespacedCustomObject({
      ...KV,
      plural: 'virtualmachines',
      name,
    })) as VirtualMachine;
  const readVmi = async (name = VM) =>
    (await custom
      .getNamespacedCustomObject({ ...KV, plural: 'virtualmachineinstances', name })
      .catch(() => undefined)) as VirtualMachineInstance | undefined;
  const get = async (plural: string, name: string) =>
    (await custom.getNamespacedCustomObject({ ...SNAPKV, plural, name })) as {
      metadata: { uid: string };
      status?: Record<string, unknown> & { phase?: string; readyToUse?: boolean; complete?: boolean };
    };
  /** Merge-patches the VM's runStrategy (through the project's client: a real merge patch). */
  const setRunStrategy = async (runStrategy: string, name = VM) => {
    const c = KubeClient.fromKubeconfig(info.kubeconfigPath);
    try {
      await c.patch(VirtualMachineType, name, { spec: { runStrategy } }, { namespace: NS, type: 'merge' });
    } finally {
      c.close();
    }
  };

  /** Waits for the VM's guest to boot; its console, and the launcher's serial log path. */
  async function booted(name = VM): Promise<{ con: SerialConsole; vmiUid: string; pod: string }> {
    const vmi = await show(
      `VMI ${name} Running with the agent connected`,
      async () => {
        const v = await readVmi(name);
        return v?.status?.phase === 'Running' &&
          v.status.conditions?.some((c) => c.type === 'AgentConnected' && c.status === 'True')
          ? v
          : undefined;
      },
      300_000,
    );
    const pods = (
      await core.listNamespacedPod({
        namespace: NS,
        labelSelector: `kubevirt.io/created-by=${vmi.metadata?.uid}`,
      })
    ).items;
    const pod = pods[0]!;
    const con = await fx.launcherConsole(pod);
    await con.waitFor(MARKER, 180_000);
    return { con, vmiUid: vmi.metadata?.uid ?? '', pod: pod.metadata?.name ?? '' };
  }
  /** Boot markers in the launcher's serial log (kubectl run asynchronously: the driver is in this process). */
  const markerCount = async (pod: string, vmiUid: string) => {
    const log = `/var/run/kubevirt-private/${vmiUid}/virt-serial0-log`;
    const x = kubectlExecAsync(info.kubeconfigPath, NS, pod, ['busybox', 'grep', '-c', MARKER, log]);
    await x.exited;
    return x.out().trim();
  };
  /** What the guest reads at the start of its second disk (page cache dropped first). */
  const readDisk = (con: SerialConsole) =>
    con.run('echo 3 > /proc/sys/vm/drop_caches; head -c 14 /dev/vdb; echo');
  const writeDisk = (con: SerialConsole, text: string) => con.run(`printf '${text}' > /dev/vdb; sync`);

  it('snapshots the running VM (frozen through its agent) and restores its CSI disk: A back, B gone', {
    timeout: 900_000,
  }, async () => {
    // The claim, holding disk.img (written by a pod, which binds the WaitForFirstConsumer
    // claim), with the content type CDI gives a DataVolume's claim: a disk image, so an
    // export serves disk.img itself (the restore keeps the annotation).
    await core.createNamespacedPersistentVolumeClaim({
      namespace: NS,
      body: {
        metadata: { name: 'data', annotations: { [CONTENT_TYPE_ANNOTATION]: 'kubevirt' } },
        spec: {
          storageClassName: LOCAL_CLASS,
          accessModes: ['ReadWriteOnce'],
          resources: { requests: { storage: DATA_DISK.claim } },
        },
      },
    });
    await core.createNamespacedPod({
      namespace: NS,
      body: {
        metadata: { name: 'mkdisk' },
        spec: {
          restartPolicy: 'Never',
          volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }],
          containers: [
            {
              name: 'c',
              image: info.images['kubevirt-ts'] ?? '',
              imagePullPolicy: 'Never',
              // QEMU runs as user 107: the image is theirs to write.
              command: ['/bin/sh', '-c', `${DATA_DISK.make} && chmod 666 /data/disk.img`],
              securityContext: { runAsUser: 0 },
              volumeMounts: [{ name: 'data', mountPath: '/data' }],
            },
          ],
        },
      },
    });
    await show('the disk image written', async () => {
      const p = await core.readNamespacedPod({ name: 'mkdisk', namespace: NS });
      if (p.status?.phase === 'Failed') throw new Error(`mkdisk failed: ${JSON.stringify(p.status)}`);
      return p.status?.phase === 'Succeeded';
    });
    await core.deleteNamespacedPod({ name: 'mkdisk', namespace: NS });
    await show(
      'mkdisk gone',
      async () => !(await core.readNamespacedPod({ name: 'mkdisk', namespace: NS }).catch(() => undefined)),
    );
    const vm = {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachine',
      metadata: { name: VM, namespace: NS },
      spec: {
        runStrategy: 'Always',
        template: {
          spec: {
            // The busybox guest ignores ACPI shutdown: without this, deleting the namespace
            // waits out the default 180 s grace, and the driver would stop (afterAll) while
            // the kubelet still has the claim published (a CI run failed on that leftover).
            terminationGracePeriodSeconds: 0,
            domain: {
              devices: {
                autoattachGraphicsDevice: false,
                disks: [
                  { name: 'boot', disk: { bus: 'virtio' } },
                  { name: 'data', disk: { bus: 'virtio' } },
                ],
              },
              resources: { requests: { memory: '128Mi' } },
            },
            volumes: [
              {
                name: 'boot',
                containerDisk: {
                  image: 'localhost/kubevirt-ts/tiny-guest-containerdisk:latest',
                  imagePullPolicy: 'Never',
                },
              },
              { name: 'data', persistentVolumeClaim: { claimName: 'data' } },
            ],
          },
        },
      },
    };
    await custom.createNamespacedCustomObject({ ...KV, plural: 'virtualmachines', body: vm });
    const first = await booted();
    await writeDisk(first.con, 'FILE-A-PRESENT');
    expect(await readDisk(first.con)).toBe('FILE-A-PRESENT\n');

    // The online snapshot; the VMI is watched while it is taken (every write of it: the
    // window may be shorter than any poll).
    let frozenAt: number | undefined;
    let thawedAt: number | undefined;
    const vmiWatch = await new Watch(fx.kc).watch(
      `/apis/kubevirt.io/v1/namespaces/${NS}/virtualmachineinstances`,
      { fieldSelector: `metadata.name=${VM}` },
      (_type, v: VirtualMachineInstance) => {
        if (v.status?.fsFreezeStatus === 'frozen') frozenAt ??= Date.now();
        else if (frozenAt !== undefined) thawedAt ??= Date.now();
      },
      () => {},
    );
    const snapCreated = Date.now();
    const snapStart = performance.now();
    await custom.createNamespacedCustomObject({
      ...SNAPKV,
      plural: 'virtualmachinesnapshots',
      body: {
        apiVersion: 'snapshot.kubevirt.io/v1beta1',
        kind: 'VirtualMachineSnapshot',
        metadata: { name: 'snap1' },
        spec: { source: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: VM } },
      },
    });
    const snap = await show('the VM snapshot ready', async () => {
      const s = await get('virtualmachinesnapshots', 'snap1');
      return s.status?.readyToUse ? s : undefined;
    });
    figures.online_snapshot_ms = performance.now() - snapStart;
    const readyAt = Date.now();
    expect(snap.status?.phase).toBe('Succeeded');
    expect(snap.status?.indications).toEqual(['GuestAgent', 'Online']);
    expect(snap.status?.snapshotVolumes).toEqual({ includedVolumes: ['data'], excludedVolumes: ['boot'] });
    const vsName = `vmsnapshot-${snap.metadata.uid}-volume-data`;
    const vs = (await custom.getNamespacedCustomObject({
      group: 'snapshot.storage.k8s.io',
      version: 'v1',
      namespace: NS,
      plural: 'volumesnapshots',
      name: vsName,
    })) as {
      spec: unknown;
      status?: { readyToUse?: boolean; creationTime?: string };
    };
    expect(vs.spec).toEqual({
      source: { persistentVolumeClaimName: 'data' },
      volumeSnapshotClassName: LOCAL_CLASS,
    });
    expect(vs.status?.readyToUse).toBe(true);
    await show(
      'the guest thawed',
      async () => (await readVmi())?.status?.fsFreezeStatus === undefined,
      30_000,
    );
    vmiWatch.abort();
    expect((await readVm()).status?.snapshotInProgress).toBeUndefined();
    // The launcher logged the agent's freeze and then the unfreeze, both while the snapshot
    // was taken (the node's clock is this host's): the guest was frozen during it.
    const window = await freezeWindow(info.kubeconfigPath, NS, first.pod);
    expect(window, "the launcher's froze and thawed lines").toBeDefined();
    const [froze, thawed] = [Date.parse(window?.froze ?? ''), Date.parse(window?.thawed ?? '')];
    expect(snapCreated <= froze && froze <= thawed && thawed <= readyAt, JSON.stringify(window)).toBe(true);
    figures.freeze_ms = window?.ms;
    const seen = thawedAt !== undefined && frozenAt !== undefined ? thawedAt - frozenAt : undefined;
    console.log(
      `online snapshot: the guest was frozen ${window?.ms} ms (launcher: froze ${window?.froze}, thawed ${window?.thawed}); ` +
        `the VMI's watch saw fsFreezeStatus frozen ${seen === undefined ? 'never (the handler wrote no frozen status in the window)' : `for ${seen} ms`}; ` +
        `the VolumeSnapshot cut at ${vs.status?.creationTime}; the VM snapshot created to ready ${figures.online_snapshot_ms?.toFixed(0)} ms`,
    );

    // B over A, then stop and restore.
    await writeDisk(first.con, 'FILE-B-PRESENT');
    expect(await readDisk(first.con)).toBe('FILE-B-PRESENT\n');
    expect(await markerCount(first.pod, first.vmiUid)).toBe('1');
    first.con.close();
    await setRunStrategy('Halted');
    await show('VMI gone', async () => !(await readVmi()));
    const restoreStart = performance.now();
    await custom.createNamespacedCustomObject({
      ...SNAPKV,
      plural: 'virtualmachinerestores',
      body: {
        apiVersion: 'snapshot.kubevirt.io/v1beta1',
        kind: 'VirtualMachineRestore',
        metadata: { name: 'restore1' },
        spec: {
          target: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: VM },
          virtualMachineSnapshotName: 'snap1',
        },
      },
    });
    const restore = await show('the restore complete', async () => {
      const r = await get('virtualmachinerestores', 'restore1');
      return r.status?.complete ? r : undefined;
    });
    figures.restore_ms = performance.now() - restoreStart;
    const claim = `restore-${restore.metadata.uid}-data`;
    expect(restore.status?.restores).toEqual([
      { volumeName: 'data', persistentVolumeClaim: claim, volumeSnapshotName: vsName },
    ]);
    expect(
      (await readVm()).spec.template.spec?.volumes?.find((v) => v.name === 'data')?.persistentVolumeClaim
        ?.claimName,
    ).toBe(claim);
    await setRunStrategy('Always');
    const second = await booted();
    expect(await readDisk(second.con)).toBe('FILE-A-PRESENT\n');
    expect(await markerCount(second.pod, second.vmiUid)).toBe('1');
    second.con.close();
    await setRunStrategy('Halted');
    await show('VMI gone', async () => !(await readVmi()));
  });

  it('clones the stopped VM (a snapshot, then a restore to a new VM): new MAC and serial, its own disk, boots once', {
    timeout: 600_000,
  }, async () => {
    figures.clone_vm_ms = await cloneStoppedVm({
      info,
      core,
      custom,
      ns: NS,
      vm: VM,
      readVm,
      readVmi,
      setRunStrategy,
      booted,
      markerCount,
      readDisk,
      writeDisk,
      show,
    });
    // Bench mode: the source VM (stopped) exported; then the figures, whatever was taken.
    let reference = '';
    if (SNAPSHOT_BENCH) {
      const claim =
        (await readVm()).spec.template.spec?.volumes?.find((v) => v.name === 'data')?.persistentVolumeClaim
          ?.claimName ?? '';
      const x = await exportFigures(
        info.kubeconfigPath,
        core,
        info.images['kubevirt-ts'] ?? '',
        NS,
        VM,
        claim,
      );
      figures.export_mib_s = x.raw_mib_s;
      figures.export_gzip_mib_s = x.gzip_mib_s;
      reference = exportReferenceLine(x);
    }
    console.log(benchLine());
    if (reference) console.log(reference);
  });
});
