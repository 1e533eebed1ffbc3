/**
 * Issue 25's DataVolume proof on the real one-node cluster: the components installed from
 * the manifests (virt-controller running CDI's DataVolume controller), the project's CSI
 * driver in this process with the real csi-provisioner as a host process
 * (test/cluster/csi-stack.ts, as csi-provisioning.test.ts), and an HTTP server pod on the
 * pod network serving the tiny guest's bootable qcow2 (advertising ranges: the importer
 * streams it through nbdkit's curl plugin). `kubectl apply` of a VM whose
 * dataVolumeTemplates import that disk: the DataVolume's PVC is provisioned on the pool
 * when the importer pod (its first consumer) is scheduled, the importer converts the
 * qcow2 to disk.img, the VM waits (Provisioning) and then boots the guest from the PVC
 * (its only disk), once; the guest writes to it, and after `virtctl stop` and `start` (a new
 * launcher pod) reads it back, one boot per start. The same with a Block DataVolume
 * imported from a registry source (the tiny guest's containerDisk image, `pullMethod:
 * node`): the importer writes the device, the launcher gets it as a `volumeDevices` entry
 * and QEMU as a host device. A 404 URL is retried with the error in the Running condition
 * and an event; a wrong checksum fails the DataVolume. Imports killed or deleted midway:
 * import-interruption-case.ts.
 *
 * The driver's one name registers once with a kubelet: like the other CSI cluster test
 * files, this one takes the host lock `csi-driver` for its whole run
 * (test/support/host-lock.ts).
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, realpathSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { CoreV1Api, CustomObjectsApi, V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { ClusterInfo } from '../../scripts/cluster/state';
import type { DataVolume } from '../../src/api/generated/cdi/types';
import type { VirtualMachine, VirtualMachineInstance } from '../../src/api/generated/types';
import { kubectlExecAsync } from '../support/cluster-pods';
import { BOOT_MARKER, bootDiskPath, guestDir } from '../support/guest';
import { repoRoot } from '../support/netns-process';
import { qemuCmdline } from '../support/processes';
import { waitFor } from '../support/wait';
import { csiClusterTestsEnabled } from './csi-stack';
import { importInterruptionCase } from './import-interruption-case';
import { oneDiskVm, storageClusterFixture } from './storage-cluster';

const enabled = csiClusterTestsEnabled('DataVolumes on the cluster');
const NS = 'cluster-datavolumes';
const VM = 'vm-dv';
/** examples/vm-tiny-datavolume.yaml's VM: a Block registry import of CONTAINERDISK. */
const BLOCK_VM = 'vm-tiny-dv';
/** The tiny guest's containerDisk, in the node's image store (scripts/cluster/images.ts). */
const CONTAINERDISK = 'docker://localhost/kubevirt-ts/tiny-guest-containerdisk:latest';
const CDI = { group: 'cdi.kubevirt.io', version: 'v1beta1', plural: 'datavolumes' };
const KV = { group: 'kubevirt.io', version: 'v1' };
/** Where the guest writes: 40 MiB into the disk, past the 14 MiB boot image. */
const MARKER_SECTOR = 81920;
/**
 * The disk server: node serving /guest/boot.qcow2 (404 for anything else), answering Range
 * requests as real servers do (the importer then streams the image) and logging each.
 */
const SERVER = `require('http').createServer((q,s)=>{const f=require('fs');const p='/guest/'+(q.url==='/boot.qcow2'?'boot.qcow2':'');if(!p.endsWith('.qcow2')){s.writeHead(404);return s.end()}const n=f.statSync(p).size;if(q.method==='HEAD'){console.log('head');s.writeHead(200,{'content-length':n,'accept-ranges':'bytes'});return s.end()}const r=/^bytes=(\\d+)-(\\d*)$/.exec(q.headers.range||'');if(r){console.log('range '+r[0]);const a=+r[1],b=r[2]?Math.min(+r[2],n-1):n-1;s.writeHead(206,{'content-length':b-a+1,'content-range':'bytes '+a+'-'+b+'/'+n,'accept-ranges':'bytes'});return f.createReadStream(p,{start:a,end:b}).pipe(s)}console.log('whole');s.writeHead(200,{'content-length':n});f.createReadStream(p).pipe(s)}).listen(8080)`;

describe.skipIf(!enabled)('DataVolumes on the real cluster', () => {
  const fx = storageClusterFixture({ namespace: NS, tmpPrefix: 'kvts-dv-' });
  let info: ClusterInfo;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let dir = '';
  let kubectl: (...args: string[]) => string;
  let url = '';
  const sum = createHash('sha256').update(readFileSync(bootDiskPath)).digest('hex');

  const readDv = async (name: string) =>
    (await custom.getNamespacedCustomObject({ ...CDI, namespace: NS, name }).catch(() => undefined)) as
      | DataVolume
      | undefined;
  const readVm = async (name: string) =>
    (await custom.getNamespacedCustomObject({
      ...KV,
      plural: 'virtualmachines',
      namespace: NS,
      name,
    })) as VirtualMachine;
  const launcherPod = async (vmName: string) =>
    (
      await core.listNamespacedPod({
        namespace: NS,
        labelSelector: `kubevirt.io=virt-launcher,vm.kubevirt.io/name=${vmName}`,
      })
    ).items.find((p) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp);
  const dvYaml = (name: string, source: object) =>
    stringify({
      apiVersion: 'cdi.kubevirt.io/v1beta1',
      kind: 'DataVolume',
      metadata: { name, namespace: NS },
      spec: { source, storage: { resources: { requests: { storage: '64Mi' } } } },
    });
  const apply = (file: string, text: string) => {
    writeFileSync(join(dir, file), text);
    return kubectl('apply', '-f', join(dir, file));
  };
  const console = (pod: V1Pod) => fx.launcherConsole(pod);

  const events = async (name: string) =>
    (await core.listNamespacedEvent({ namespace: NS })).items
      .filter((e) => e.involvedObject.name === name)
      .map((e) => `${e.reason}: ${e.message}`);

  /** What the namespace and virt-controller show, for a failure message. */
  const diagnose = async () => {
    const dvs = (await custom
      .listNamespacedCustomObject({ ...CDI, namespace: NS })
      .catch(() => ({ items: [] }))) as {
      items: DataVolume[];
    };
    return `DataVolumes: ${JSON.stringify(dvs.items.map((d) => [d.metadata?.name, d.status]))}\n${await fx.diagnose(['virt-controller'], 40)}\n${fx.csi?.sidecars.logs(10)}`;
  };
  const waitOrDiagnose = <T>(what: string, f: () => Promise<T | undefined>, ms: number, every: number) =>
    waitFor(what, f, ms, every).catch(async (e) => {
      throw new Error(`${e}\n${await diagnose()}`);
    });

  beforeAll(async () => {
    await fx.setUp();
    ({ info, core, custom, kubectl, dir } = fx);
    // The disk server: the guest build's directory, read-only, served by node on the pod network.
    await core.createNamespacedPod({
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
              image: info.images['virt-launcher'],
              imagePullPolicy: 'Never',
              command: ['node', '-e', SERVER],
              volumeMounts: [{ name: 'guest', mountPath: '/guest', readOnly: true }],
            },
          ],
        },
      },
    });
    const server = await waitFor(
      'disk server running',
      async () => {
        const p = await core.readNamespacedPod({ name: 'disk-server', namespace: NS });
        return p.status?.phase === 'Running' && p.status.podIP ? p : undefined;
      },
      120_000,
      250,
    );
    url = `http://${server.status?.podIP}:8080`;
  }, 1_200_000);

  afterAll(() => fx.tearDown(), 400_000);

  /** A VM whose one disk is the DataVolume `<vm>-root` its one template makes. */
  const vmWithTemplate = (name: string, dvSpec: object) =>
    oneDiskVm({
      name,
      namespace: NS,
      dataVolumeTemplates: [{ metadata: { name: `${name}-root` }, spec: dvSpec }],
      volume: { dataVolume: { name: `${name}-root` } },
    });

  /** The VM's DataVolume Succeeded (a failed or restarted import throws at once); the states seen on the way. */
  const importedDv = async (vmName: string) => {
    const seen = new Set<string>();
    const dv = await waitOrDiagnose(
      `DataVolume ${vmName}-root Succeeded`,
      async () => {
        const v = await readVm(vmName).catch(() => undefined);
        if (v?.status?.printableStatus) seen.add(v.status.printableStatus);
        const d = await readDv(`${vmName}-root`);
        if (d?.status?.phase) seen.add(`dv:${d.status.phase}`);
        if (d?.status?.phase === 'Failed' || (d?.status?.restartCount ?? 0) > 0)
          throw new Error(`DataVolume import failed: ${JSON.stringify(d?.status)}\n${await diagnose()}`);
        return d?.status?.phase === 'Succeeded' ? d : undefined;
      },
      300_000,
      250,
    );
    return { dv, seen };
  };

  /** How many times the launcher pod's serial log holds the boot marker (kubectl run asynchronously: the driver is in this process). */
  const bootCount = async (pod: V1Pod) => {
    const vmiUid = pod.metadata?.labels?.['kubevirt.io/created-by'];
    const grep = kubectlExecAsync(info.kubeconfigPath, NS, pod.metadata?.name ?? '', [
      'busybox',
      'grep',
      '-c',
      BOOT_MARKER,
      `/var/run/kubevirt-private/${vmiUid}/virt-serial0-log`,
    ]);
    await grep.exited;
    return grep.out().trim();
  };

  /** Our CLI's `virtctl VERB VM` (asynchronously: the driver is in this process). */
  const virtctl = (verb: string, vmName: string) =>
    promisify(execFile)(process.execPath, [
      join(repoRoot, 'dist', 'cli', 'virtctl.js'),
      verb,
      vmName,
      '-n',
      NS,
      '--kubeconfig',
      info.kubeconfigPath,
    ]);

  /**
   * The guest booted from the DataVolume: `check` looks at its QEMU; it writes a line at
   * 40 MiB into /dev/vda; after `virtctl stop` and `start` (a new launcher pod) the new
   * boot reads the line back. The serial log holds one boot marker per launcher pod.
   */
  const bootWriteRestartRead = async (vmName: string, check: (cmdline: string) => void) => {
    const launcher = await waitOrDiagnose('launcher pod Running', () => launcherPod(vmName), 240_000, 1000);
    const marker = `KVTS-DV-WRITE-${Date.now()}`;
    const con = await console(launcher);
    try {
      await con.waitFor(BOOT_MARKER, 180_000);
      check(qemuCmdline(NS, vmName) ?? '');
      // QEMU runs as user 107: the importer left the disk theirs.
      await con.run(
        `echo ${marker} | dd of=/dev/vda bs=512 seek=${MARKER_SECTOR} conv=notrunc 2>/dev/null; sync; echo 3 > /proc/sys/vm/drop_caches`,
      );
      expect(
        await con.run(`dd if=/dev/vda bs=512 skip=${MARKER_SECTOR} count=1 2>/dev/null | head -n1`),
      ).toBe(`${marker}\n`);
    } finally {
      con.close();
    }
    expect(await bootCount(launcher)).toBe('1');

    await virtctl('stop', vmName);
    await waitOrDiagnose(
      'the first launcher pod gone',
      async () =>
        (await core.listNamespacedPod({ namespace: NS })).items.some(
          (p) => p.metadata?.uid === launcher.metadata?.uid,
        )
          ? undefined
          : true,
      180_000,
      500,
    );
    await virtctl('start', vmName);
    const again = await waitOrDiagnose(
      'a new launcher pod Running',
      () => launcherPod(vmName),
      240_000,
      1000,
    );
    expect(again.metadata?.uid).not.toBe(launcher.metadata?.uid);
    const con2 = await console(again);
    try {
      await con2.waitFor(BOOT_MARKER, 180_000);
      expect(
        await con2.run(`dd if=/dev/vda bs=512 skip=${MARKER_SECTOR} count=1 2>/dev/null | head -n1`),
      ).toBe(`${marker}\n`);
    } finally {
      con2.close();
    }
    expect(await bootCount(again)).toBe('1');
    return again;
  };

  it('a VM with an http dataVolumeTemplate boots from the imported PVC; its write survives stop and start', {
    timeout: 900_000,
  }, async () => {
    apply(
      'vm.yaml',
      stringify(
        // KubeVirt's VM schema embeds an older DataVolumeSpec without http.checksum (the
        // API server refuses it there): the checksum is tested on a DataVolume below.
        vmWithTemplate(VM, {
          source: { http: { url: `${url}/boot.qcow2` } },
          storage: { resources: { requests: { storage: '64Mi' } } },
        }),
      ),
    );
    const { dv, seen } = await importedDv(VM);
    expect(seen).toContain('Provisioning');
    expect(seen).toContain('dv:ImportScheduled');
    expect(dv.status).toMatchObject({ progress: '100.0%', claimName: `${VM}-root`, restartCount: 0 });
    expect(dv.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: 'VirtualMachine',
      name: VM,
      controller: true,
    });
    const claim = await core.readNamespacedPersistentVolumeClaim({ name: `${VM}-root`, namespace: NS });
    expect(claim.status?.phase).toBe('Bound');
    expect(claim.spec?.storageClassName).toBe('kubevirt-ts-local');
    expect(claim.metadata?.ownerReferences?.[0]).toMatchObject({ kind: 'DataVolume', name: `${VM}-root` });
    const pv = await core.readPersistentVolume({ name: claim.spec?.volumeName ?? '' });
    expect(await fx.csi!.volumes()).toContain(pv.spec?.csi?.volumeHandle);
    expect(await events(`${VM}-root`)).toEqual(
      expect.arrayContaining([`ImportSucceeded: Successfully imported into PVC ${VM}-root`]),
    );
    // Streamed through nbdkit's curl plugin (the server advertises ranges): the importer's
    // probe and HEAD, nbdkit's HEADs and the ranges qemu-img reads; not node's export (its
    // 8 MiB blocks), not downloaded whole.
    const served = (await core.readNamespacedPodLog({ name: 'disk-server', namespace: NS })).split('\n');
    expect(served).toContain('range bytes=0-5');
    expect(served.filter((l) => l === 'head').length).toBeGreaterThanOrEqual(2);
    expect(served.filter((l) => l.startsWith('range ') && l !== 'range bytes=0-5').length).toBeGreaterThan(0);
    expect(served).not.toContain('range bytes=0-8388607');
    expect(served).not.toContain('whole');

    const vmi = async () =>
      (await custom.getNamespacedCustomObject({
        ...KV,
        plural: 'virtualmachineinstances',
        namespace: NS,
        name: VM,
      })) as VirtualMachineInstance;
    await bootWriteRestartRead(VM, (cmdline) => {
      // Booted from the claim: its disk.img is QEMU's only file-backed disk.
      expect(cmdline).toContain(
        '"driver":"file","filename":"/var/run/kubevirt-private/vmi-disks/root/disk.img"',
      );
      expect(cmdline.match(/"driver":"file"/g)).toHaveLength(1);
    });
    expect((await vmi()).spec.volumes).toEqual([{ name: 'root', dataVolume: { name: `${VM}-root` } }]);
  });

  it('a Block DataVolume from a registry source (a containerDisk image, pullMethod node) boots as a block disk; its write survives stop and start', {
    timeout: 900_000,
  }, async () => {
    // The README's example as it is (namespaced here by kubectl -n).
    kubectl('apply', '-n', NS, '-f', join(repoRoot, 'examples', 'vm-tiny-datavolume.yaml'));
    const { dv } = await importedDv(BLOCK_VM);
    expect(dv.status).toMatchObject({ progress: '100.0%', restartCount: 0 });
    const claim = await core.readNamespacedPersistentVolumeClaim({ name: `${BLOCK_VM}-root`, namespace: NS });
    expect(claim.spec?.volumeMode).toBe('Block');
    expect(claim.metadata?.annotations?.['cdi.kubevirt.io/storage.import.source']).toBe('registry');
    expect(claim.metadata?.annotations?.['cdi.kubevirt.io/storage.import.endpoint']).toBe(CONTAINERDISK);
    const pod = await bootWriteRestartRead(BLOCK_VM, (cmdline) => {
      expect(cmdline).toContain('"driver":"host_device","filename":"/dev/root"');
      expect(cmdline).not.toContain('"driver":"file"');
    });
    // The launcher hands the claim to QEMU as a device, not a mount.
    const compute = pod.spec?.containers.find((c) => c.name === 'compute');
    expect(compute?.volumeDevices).toEqual([{ name: 'root', devicePath: '/dev/root' }]);
    expect(compute?.volumeMounts?.some((m) => m.name === 'root')).toBe(false);
  });

  it('a 404 URL is retried with the error shown; a wrong checksum fails the DataVolume', {
    timeout: 300_000,
  }, async () => {
    apply('bad-url.yaml', dvYaml('bad-url', { http: { url: `${url}/missing.qcow2` } }));
    apply(
      'bad-sum.yaml',
      dvYaml('bad-sum', { http: { url: `${url}/boot.qcow2`, checksum: `sha256:${'0'.repeat(64)}` } }),
    );
    const bad = await waitOrDiagnose(
      'bad-url retried',
      async () => {
        const d = await readDv('bad-url');
        return (d?.status?.restartCount ?? 0) >= 1 ? d : undefined;
      },
      240_000,
      500,
    );
    const running = bad.status?.conditions?.find((c) => c.type === 'Running');
    expect(running).toMatchObject({
      status: 'False',
      reason: 'Error',
      message: `http data source ${url}/missing.qcow2 answered 404 Not Found`,
    });
    expect(await events('bad-url')).toContain(
      `Error: Unable to import into PVC bad-url: http data source ${url}/missing.qcow2 answered 404 Not Found`,
    );
    const failed = await waitFor(
      'bad-sum Failed',
      async () => {
        const d = await readDv('bad-sum');
        return d?.status?.phase === 'Failed' ? d : undefined;
      },
      240_000,
      500,
    );
    expect(failed.status?.conditions?.find((c) => c.type === 'Running')?.message).toBe(
      `checksum mismatch: the source's sha256 is ${sum}, the DataVolume's checksum says ${'0'.repeat(64)}`,
    );
    expect(failed.status?.restartCount).toBe(0);
  });

  it(
    'an importer pod killed mid-import is retried to the right bytes; a DataVolume deleted mid-import leaves nothing in the pool',
    {
      timeout: 900_000,
    },
    () => importInterruptionCase(fx),
  );
});
