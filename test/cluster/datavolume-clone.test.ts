/**
 * Issue 25's clone sources on the real one-node cluster: the components installed from the
 * manifests (virt-controller running CDI's DataVolume and DataSource controllers), the
 * project's CSI driver in this process on a test pool with the real csi-provisioner,
 * csi-snapshotter and snapshot-controller as host processes, the snapshot kinds served
 * before virt-controller starts (storageClusterFixture, storage-cluster.ts).
 *
 * A 1 GiB DataVolume imported from the tiny guest's containerDisk is the source. A
 * `source.pvc` DataVolume (no size: the source's) is a CSI clone of it, a `source.snapshot`
 * one a restore of a VolumeSnapshot of it, a `sourceRef` one goes through a DataSource
 * (Ready); each reaches Succeeded (the test prints the time from creation) and its volume
 * in the pool is byte-identical to the source's (sha256 of the pool files). A VM whose
 * dataVolumeTemplates clone the source boots from the clone (one boot), the guest writes
 * to it; a clone of the running VM's disk waits (CloneSourceInUse) until the VM stops and
 * then holds what the guest wrote; the clone's bytes differ from the source's, which are
 * unchanged.
 * Then CDI's example manifests (cdi-examples-case.ts).
 *
 * The fixture takes the host locks for the file's whole run (test/support/host-lock.ts).
 */
import { execFile } from 'node:child_process';
import { readdirSync, readFileSync, realpathSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { DataSource, DataVolume } from '../../src/api/generated/cdi/types';
import { bytesOf } from '../../src/controllers/common/quantity';
import { LOCAL_CLASS } from '../../src/controllers/csi-driver/objects';
import { cdiExamplesDir, needsCdiExamples } from '../support/cdi-examples';
import { BOOT_MARKER, guestDir } from '../support/guest';
import { repoRoot } from '../support/netns-process';
import { qemuCmdline } from '../support/processes';
import { waitFor } from '../support/wait';
import { runCdiExamples } from './cdi-examples-case';
import { csiClusterTestsEnabled } from './csi-stack';
import { oneDiskVm, storageClusterFixture } from './storage-cluster';

const enabled = csiClusterTestsEnabled('DataVolume clones on the cluster');
const NS = 'cluster-dv-clone';
const CONTAINERDISK = 'docker://localhost/kubevirt-ts/tiny-guest-containerdisk:latest';
const CDI = { group: 'cdi.kubevirt.io', version: 'v1beta1', namespace: NS };
/** Thin: the registry examples ask 5Gi each; only what is written takes space. */
const POOL_BYTES = 16 * 1024 ** 3;
const MARKER_SECTOR = 81920;
/** The tiny guest's qcow2 over plain HTTP, for the http examples. */
const SERVER = `require('http').createServer((q,s)=>{const f=require('fs');if(q.url!=='/boot.qcow2'){s.writeHead(404);return s.end()}const n=f.statSync('/guest/boot.qcow2').size;s.writeHead(200,{'content-length':n});f.createReadStream('/guest/boot.qcow2').pipe(s)}).listen(8080)`;

describe.skipIf(!enabled)('DataVolume clone, snapshot and DataSource sources on the real cluster', () => {
  const sc = storageClusterFixture({
    namespace: NS,
    tmpPrefix: 'kvts-dv-clone-',
    snapshots: true,
    poolBytes: POOL_BYTES,
  });
  let sourceSum = '';
  const custom = () => sc.custom;
  const core = () => sc.core;

  const readDv = async (name: string) =>
    (await custom()
      .getNamespacedCustomObject({ ...CDI, plural: 'datavolumes', name })
      .catch(() => undefined)) as DataVolume | undefined;
  const createDv = (name: string, spec: object) =>
    custom().createNamespacedCustomObject({
      ...CDI,
      plural: 'datavolumes',
      body: { apiVersion: 'cdi.kubevirt.io/v1beta1', kind: 'DataVolume', metadata: { name }, spec },
    });
  const events = async (name: string) =>
    (await core().listNamespacedEvent({ namespace: NS })).items
      .filter((e) => e.involvedObject.name === name)
      .map((e) => `${e.reason}: ${e.message}`);
  const diagnose = async () => {
    const dvs = (await custom()
      .listNamespacedCustomObject({ ...CDI, plural: 'datavolumes' })
      .catch(() => ({ items: [] }))) as { items: DataVolume[] };
    const states = dvs.items.map((d) => [d.metadata?.name, d.status?.phase, d.status?.conditions]);
    return `DataVolumes: ${JSON.stringify(states)}\n${await sc.diagnose()}\n${sc.csi?.sidecars.logs(10)}`;
  };
  const show = <T>(what: string, f: () => Promise<T | undefined>, ms = 300_000, every = 200) =>
    waitFor(what, f, ms, every).catch(async (e) => {
      throw new Error(`${e}\n${await diagnose()}`);
    });
  /** The DataVolume Succeeded (Failed throws at once); ms since `t0`. */
  const succeeded = async (name: string, t0: number) => {
    const dv = await show(`DataVolume ${name} Succeeded`, async () => {
      const d = await readDv(name);
      if (d?.status?.phase === 'Failed')
        throw new Error(`DataVolume ${name} Failed: ${JSON.stringify(d.status)}`);
      return d?.status?.phase === 'Succeeded' ? d : undefined;
    });
    return { dv, ms: Date.now() - t0 };
  };
  /** The pool file of a DataVolume's volume (through its claim's PV). */
  const poolFile = async (claim: string) => {
    const c = await core().readNamespacedPersistentVolumeClaim({ name: claim, namespace: NS });
    const pv = await core().readPersistentVolume({ name: c.spec?.volumeName ?? '' });
    return join(sc.csi?.pool.dir ?? '', 'volumes', pv.spec?.csi?.volumeHandle ?? '', 'disk');
  };
  /** sha256 of a pool file (sha256sum: asynchronous, the driver is in this process). */
  const sha256 = async (file: string) =>
    (await promisify(execFile)('sha256sum', [file], { maxBuffer: 1 << 20 })).stdout.split(' ')[0];
  /** Whether a loop device holds `file` (the volume staged on the node). */
  const staged = (file: string) => {
    const bound = loopBackingFiles();
    return bound.includes(file) || bound.includes(realpathSync(file));
  };

  beforeAll(() => sc.setUp(), 1_200_000);
  afterAll(() => sc.tearDown(), 500_000);

  it('pvc, snapshot and DataSource sources: each a copy of the 1 GiB source, in well under a second', {
    timeout: 900_000,
  }, async () => {
    await createDv('golden', {
      source: { registry: { url: CONTAINERDISK, pullMethod: 'node' } },
      storage: { resources: { requests: { storage: '1Gi' } } },
    });
    await succeeded('golden', Date.now());
    const src = await poolFile('golden');
    // Cloned and hashed only once the importer's pod has let go of it (unstaged).
    await show('the source volume unstaged', async () => !staged(src), 120_000, 500);
    sourceSum = await sha256(src);

    // source.pvc, no size: the source's.
    let t0 = Date.now();
    await createDv('golden-clone', { source: { pvc: { namespace: NS, name: 'golden' } }, storage: {} });
    const clone = await succeeded('golden-clone', t0);
    process.stdout.write(`clone DataVolume of a 1 GiB source: created -> Succeeded in ${clone.ms} ms\n`);
    const claim = await core().readNamespacedPersistentVolumeClaim({ name: 'golden-clone', namespace: NS });
    const srcClaim = await core().readNamespacedPersistentVolumeClaim({ name: 'golden', namespace: NS });
    // The client reads an absent apiGroup as null: the core group.
    expect({ ...claim.spec?.dataSource }).toMatchObject({ kind: 'PersistentVolumeClaim', name: 'golden' });
    expect(claim.spec?.dataSource?.apiGroup ?? undefined).toBeUndefined();
    const bytes = (q: unknown) => bytesOf(q as string, 'storage');
    expect(bytes(claim.spec?.resources?.requests?.storage)).toBe(bytes(srcClaim.status?.capacity?.storage));
    expect(claim.metadata?.annotations?.['cdi.kubevirt.io/cloneType']).toBe('csi-clone');
    expect(clone.dv.status?.progress).toBe('100.0%');
    expect(await events('golden-clone')).toContain(
      `CloneSucceeded: Successfully cloned from ${NS}/golden into ${NS}/golden-clone`,
    );
    expect(await sha256(await poolFile('golden-clone'))).toBe(sourceSum);

    // source.snapshot: a VolumeSnapshot of the source, restored.
    await custom().createNamespacedCustomObject({
      group: 'snapshot.storage.k8s.io',
      version: 'v1',
      namespace: NS,
      plural: 'volumesnapshots',
      body: {
        apiVersion: 'snapshot.storage.k8s.io/v1',
        kind: 'VolumeSnapshot',
        metadata: { name: 'golden-snap' },
        spec: { volumeSnapshotClassName: LOCAL_CLASS, source: { persistentVolumeClaimName: 'golden' } },
      },
    });
    t0 = Date.now();
    await createDv('from-snap', {
      source: { snapshot: { namespace: NS, name: 'golden-snap' } },
      storage: {},
    });
    const fromSnap = await succeeded('from-snap', t0);
    process.stdout.write(
      `snapshot-source DataVolume: created (with the VolumeSnapshot) -> Succeeded in ${fromSnap.ms} ms\n`,
    );
    const snapClaim = await core().readNamespacedPersistentVolumeClaim({ name: 'from-snap', namespace: NS });
    expect({ ...snapClaim.spec?.dataSource }).toEqual({
      apiGroup: 'snapshot.storage.k8s.io',
      kind: 'VolumeSnapshot',
      name: 'golden-snap',
    });
    expect(await sha256(await poolFile('from-snap'))).toBe(sourceSum);

    // sourceRef: a DataSource naming the source; its Ready condition first.
    await custom().createNamespacedCustomObject({
      ...CDI,
      plural: 'datasources',
      body: {
        apiVersion: 'cdi.kubevirt.io/v1beta1',
        kind: 'DataSource',
        metadata: { name: 'golden-ds' },
        spec: { source: { pvc: { namespace: NS, name: 'golden' } } },
      },
    });
    const ds = await show('DataSource golden-ds Ready', async () => {
      const d = (await custom().getNamespacedCustomObject({
        ...CDI,
        plural: 'datasources',
        name: 'golden-ds',
      })) as DataSource;
      return d.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ? d : undefined;
    });
    expect(ds.status?.source).toEqual({ pvc: { namespace: NS, name: 'golden' } });
    t0 = Date.now();
    await createDv('from-ds', { sourceRef: { kind: 'DataSource', name: 'golden-ds' }, storage: {} });
    const fromDs = await succeeded('from-ds', t0);
    process.stdout.write(`DataSource-ref DataVolume: created -> Succeeded in ${fromDs.ms} ms\n`);
    expect(await sha256(await poolFile('from-ds'))).toBe(sourceSum);
  });

  it('the clone boots: a VM cloning the source in its dataVolumeTemplates; its writes stay off the source', {
    timeout: 900_000,
  }, async () => {
    expect(sourceSum).not.toBe('');
    const vm = 'vm-clone';
    await custom().createNamespacedCustomObject({
      group: 'kubevirt.io',
      version: 'v1',
      namespace: NS,
      plural: 'virtualmachines',
      body: oneDiskVm({
        name: vm,
        namespace: NS,
        volume: { dataVolume: { name: `${vm}-root` } },
        dataVolumeTemplates: [
          {
            metadata: { name: `${vm}-root` },
            spec: { source: { pvc: { namespace: NS, name: 'golden' } }, storage: {} },
          },
        ],
      }),
    });
    await succeeded(`${vm}-root`, Date.now());
    const launcher = await show(
      'launcher pod Running',
      async () =>
        (
          await core().listNamespacedPod({
            namespace: NS,
            labelSelector: `kubevirt.io=virt-launcher,vm.kubevirt.io/name=${vm}`,
          })
        ).items.find((p: V1Pod) => p.status?.phase === 'Running'),
      240_000,
      1000,
    );
    const con = await sc.launcherConsole(launcher);
    const marker = `KVTS-CLONE-WRITE-${Date.now()}`;
    try {
      await con.waitFor(BOOT_MARKER, 180_000);
      expect(qemuCmdline(NS, vm) ?? '').toContain(
        '"driver":"file","filename":"/var/run/kubevirt-private/vmi-disks/root/disk.img"',
      );
      await con.run(
        `echo ${marker} | dd of=/dev/vda bs=512 seek=${MARKER_SECTOR} conv=notrunc 2>/dev/null; sync`,
      );
      expect(
        await con.run(`dd if=/dev/vda bs=512 skip=${MARKER_SECTOR} count=1 2>/dev/null | head -n1`),
      ).toBe(`${marker}\n`);
      // A clone of the running VM's disk waits for it: the launcher holds it read-write.
      await createDv('clone-of-running', {
        source: { pvc: { namespace: NS, name: `${vm}-root` } },
        storage: {},
      });
      const inUse = await show('clone-of-running waiting: CloneSourceInUse', async () => {
        const d = await readDv('clone-of-running');
        const r = d?.status?.conditions?.find((c) => c.type === 'Ready');
        return r?.reason === 'CloneSourceInUse' ? d : undefined;
      });
      expect(inUse.status?.phase).toBe('CloneScheduled');
      expect(inUse.status?.conditions?.find((c) => c.type === 'Ready')?.message).toBe(
        `pod ${NS}/${launcher.metadata?.name} using PersistentVolumeClaim ${vm}-root`,
      );
    } finally {
      con.close();
    }
    await promisify(execFile)(process.execPath, [
      join(repoRoot, 'dist', 'cli', 'virtctl.js'),
      'stop',
      vm,
      '-n',
      NS,
      '--kubeconfig',
      sc.info.kubeconfigPath,
    ]);
    const cloneFile = await poolFile(`${vm}-root`);
    await show('the clone unstaged after the stop', async () => !staged(cloneFile), 180_000, 500);
    const src = await poolFile('golden');
    expect(await sha256(src)).toBe(sourceSum);
    expect(await sha256(cloneFile)).not.toBe(sourceSum);
    // The guest's line is in the clone's file, not the source's.
    const grep = (f: string) =>
      promisify(execFile)('grep', ['-c', '-a', marker, f], { maxBuffer: 1 << 20 }).then(
        (r) => r.stdout.trim(),
        () => '0',
      );
    expect(await grep(cloneFile)).toBe('1');
    expect(await grep(src)).toBe('0');
    // Once the VM stopped, the waiting clone went ahead, with what the guest wrote.
    await succeeded('clone-of-running', Date.now());
    expect(await grep(await poolFile('clone-of-running'))).toBe('1');
  });

  it.skipIf(!cdiExamplesDir())(
    `CDI's examples that need no outside network reach Succeeded ${needsCdiExamples}`,
    {
      timeout: 900_000,
    },
    async () => {
      await core().createNamespacedPod({
        namespace: NS,
        body: {
          metadata: { name: 'disk-server' },
          spec: {
            restartPolicy: 'Never',
            terminationGracePeriodSeconds: 1,
            automountServiceAccountToken: false,
            volumes: [{ name: 'guest', hostPath: { path: realpathSync(guestDir), type: 'Directory' } }],
            containers: [
              {
                name: 'main',
                image: sc.info.images['virt-launcher'],
                imagePullPolicy: 'Never',
                command: ['node', '-e', SERVER],
                volumeMounts: [{ name: 'guest', mountPath: '/guest', readOnly: true }],
              },
            ],
          },
        },
      });
      const server = await show(
        'disk server running',
        async () => {
          const p = await core().readNamespacedPod({ name: 'disk-server', namespace: NS });
          return p.status?.phase === 'Running' && p.status.podIP ? p : undefined;
        },
        120_000,
        250,
      );
      await runCdiExamples({
        dir: cdiExamplesDir()!,
        namespace: NS,
        server: `http://${server.status?.podIP}:8080`,
        containerDisk: CONTAINERDISK,
        objects: sc.objects,
        custom: sc.custom,
        diagnose,
      });
    },
  );
});

/** The backing files of the host's loop devices (sysfs: opens no device). */
function loopBackingFiles(): string[] {
  const out: string[] = [];
  for (const d of readdirSync('/sys/block'))
    if (d.startsWith('loop')) {
      try {
        out.push(readFileSync(`/sys/block/${d}/loop/backing_file`, 'utf8').trim());
      } catch {
        // not bound
      }
    }
  return out;
}
