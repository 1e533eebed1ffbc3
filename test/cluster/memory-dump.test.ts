/**
 * Issue 27's memory dump on the real one-node cluster, with a real guest: the components
 * from the manifests, the project's CSI driver in this process with the real
 * csi-provisioner (test/cluster/csi-stack.ts). The tiny guest boots from its
 * containerDisk; `virtctl memory-dump get VM --claim-name --create-claim` creates a claim
 * sized as upstream sizes it (guest memory + 100 MiB + 5.5 %) and asks virt-api's
 * `memorydump` subresource; the VM controller adds the `memoryDump` volume to the VM and
 * the VMI, an attachment pod brings the claim to the node, virt-handler bind-mounts its
 * directory into the launcher pod and asks the launcher, whose libvirt writes a
 * memory-only ELF core (virDomainCoreDumpWithFormat); the request goes Completed, the
 * claim is annotated with the file name, the volume leaves the VMI and its attachment
 * pod goes. The file on the volume is an ELF core (readelf -h: CORE) of about the guest's
 * RAM; `virtctl memory-dump download --port-forward` fetches it through a
 * VirtualMachineExport of the claim (a tar.gz holding that file); `memory-dump remove`
 * dissociates the claim (the request and the template's volume go). The guest keeps
 * running throughout (one boot).
 *
 * The driver's one name registers once with a kubelet: like the other CSI cluster test
 * files, this one takes the host lock `csi-driver` for its whole run.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { CoreV1Api, CustomObjectsApi, V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { ClusterInfo } from '../../scripts/cluster/state';
import type { VirtualMachine, VirtualMachineInstance } from '../../src/api/generated/types';
import { kubectlBin, kubectlExecAsync } from '../support/cluster-pods';
import { BOOT_MARKER } from '../support/guest';
import { csiClusterTestsEnabled } from './csi-stack';
import { oneDiskVm, storageClusterFixture } from './storage-cluster';

const enabled = csiClusterTestsEnabled('memory dump on the cluster');
const NS = 'cluster-memdump';
const VM = 'vm-md';
const CLAIM = 'md-claim';
const GUEST_MIB = 128;
const KV = { group: 'kubevirt.io', version: 'v1' };
const virtctlBin = new URL('../../dist/cli/virtctl.js', import.meta.url).pathname;
const run = promisify(execFile);

describe.skipIf(!enabled)('memory dump on the real cluster', () => {
  const fx = storageClusterFixture({ namespace: NS, tmpPrefix: 'kvts-memdump-' });
  let info: ClusterInfo;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let dir = '';

  // The CSI driver answers in this process: every external command runs asynchronously.
  const virtctl = (...args: string[]) =>
    run(process.execPath, [virtctlBin, ...args, '-n', NS, '--kubeconfig', info.kubeconfigPath], {
      timeout: 300_000,
      maxBuffer: 16 * 1024 * 1024,
    });
  const readVmi = async () =>
    (await custom.getNamespacedCustomObject({
      ...KV,
      plural: 'virtualmachineinstances',
      namespace: NS,
      name: VM,
    })) as VirtualMachineInstance;
  const readVm = async () =>
    (await custom.getNamespacedCustomObject({
      ...KV,
      plural: 'virtualmachines',
      namespace: NS,
      name: VM,
    })) as VirtualMachine;
  const pods = async (selector: string) =>
    (await core.listNamespacedPod({ namespace: NS, labelSelector: selector })).items;
  const waitOrDiagnose = <T>(what: string, f: () => Promise<T | undefined>, ms: number, every = 500) =>
    fx.waitOrDiagnose(what, f, ms, every, async () => {
      const vm = await readVm().catch(() => undefined);
      const vmi = await readVmi().catch(() => undefined);
      const launcher = (await pods('kubevirt.io=virt-launcher'))[0]?.metadata?.name;
      const logs = launcher
        ? await run(kubectlBin, [
            '--kubeconfig',
            info.kubeconfigPath,
            'logs',
            '-n',
            NS,
            launcher,
            '-c',
            'compute',
            '--tail=25',
          ])
            .then((r) => `launcher:\n${r.stdout}`)
            .catch((e) => `launcher: ${e}`)
        : '';
      return `memoryDumpRequest: ${JSON.stringify(vm?.status?.memoryDumpRequest)}\nvolumeStatus: ${JSON.stringify(vmi?.status?.volumeStatus)}\n${logs}\n${await fx.diagnose(['virt-handler'], 25)}`;
    });

  beforeAll(async () => {
    await fx.setUp();
    ({ info, core, custom, dir } = fx);
  }, 1_200_000);
  afterAll(() => fx.tearDown(), 400_000);

  it('dumps the running guest into a claim as an ELF core, downloads it, and dissociates the claim', {
    timeout: 900_000,
  }, async () => {
    writeFileSync(
      join(dir, 'vm.yaml'),
      stringify(
        oneDiskVm({
          name: VM,
          namespace: NS,
          memory: `${GUEST_MIB}Mi`,
          volume: {
            containerDisk: {
              image: 'localhost/kubevirt-ts/tiny-guest-containerdisk:latest',
              imagePullPolicy: 'Never',
            },
          },
        }),
      ),
    );
    await run(kubectlBin, ['--kubeconfig', info.kubeconfigPath, 'apply', '-f', join(dir, 'vm.yaml')]);
    await waitOrDiagnose(
      'VMI Running',
      async () => ((await readVmi()).status?.phase === 'Running' ? true : undefined),
      300_000,
      1000,
    );
    const vmiUid = (await readVmi()).metadata?.uid;
    // The guest booted (its kernel in long mode: the dump is then an x86-64 core).
    const launcher = (await pods('kubevirt.io=virt-launcher'))[0] as V1Pod;
    const con = await fx.launcherConsole(launcher);
    try {
      await con.waitFor(BOOT_MARKER, 180_000);
    } finally {
      con.close();
    }

    // get --create-claim: the claim sized as upstream sizes it, then the request.
    const t0 = performance.now();
    const got = await virtctl(
      'memory-dump',
      'get',
      VM,
      `--claim-name=${CLAIM}`,
      '--create-claim',
      '--storage-class=kubevirt-ts-local',
    );
    expect(got.stdout).toContain(`PVC ${NS}/${CLAIM} created`);
    expect(got.stdout).toContain(`Successfully submitted memory dump request of VM ${VM}`);
    const claim = await core.readNamespacedPersistentVolumeClaim({ name: CLAIM, namespace: NS });
    // (128 Mi + 100 Mi) * (1 + the filesystem overhead: the CDIConfig's, else 5.5 %), rounded
    // up to a MiB (241Mi with 5.5 %).
    const cdiConfig = (await custom
      .getClusterCustomObject({
        group: 'cdi.kubevirt.io',
        version: 'v1beta1',
        plural: 'cdiconfigs',
        name: 'config',
      })
      .catch(() => undefined)) as
      | { status?: { filesystemOverhead?: { global?: string; storageClass?: Record<string, string> } } }
      | undefined;
    const fsOverhead = cdiConfig?.status?.filesystemOverhead;
    const overhead = Number(fsOverhead?.storageClass?.['kubevirt-ts-local'] ?? fsOverhead?.global ?? '0.055');
    expect(claim.spec?.resources?.requests?.storage).toBe(
      `${Math.ceil((GUEST_MIB + 100) * (1 + overhead))}Mi`,
    );

    const done = await waitOrDiagnose(
      'the request Completed',
      async () => {
        const r = (await readVm()).status?.memoryDumpRequest;
        if (r?.phase === 'Failed') throw new Error(`memory dump failed: ${r.message}`);
        return r?.phase === 'Completed' ? r : undefined;
      },
      300_000,
    );
    const dumpMs = performance.now() - t0;
    expect(done.fileName).toMatch(new RegExp(`^${VM}-${CLAIM}-\\d{8}-\\d{6}\\.memory\\.dump$`));
    const RFC3339 = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$/;
    expect(done.startTimestamp).toMatch(RFC3339);
    expect(done.endTimestamp).toMatch(RFC3339);
    expect(Date.parse(done.endTimestamp ?? '')).toBeGreaterThanOrEqual(Date.parse(done.startTimestamp ?? ''));
    const annotated = await core.readNamespacedPersistentVolumeClaim({ name: CLAIM, namespace: NS });
    expect(annotated.metadata?.annotations?.['kubevirt.io/memory-dump']).toBe(done.fileName);
    // The template keeps the volume until remove; the VMI and the node let it go.
    expect((await readVm()).spec.template?.spec?.volumes?.find((v) => v.name === CLAIM)).toEqual({
      name: CLAIM,
      memoryDump: { claimName: CLAIM, hotpluggable: true },
    });
    const vmi = await readVmi();
    expect(vmi.spec.volumes?.some((v) => v.name === CLAIM)).toBe(false);
    expect(vmi.status?.volumeStatus?.some((s) => s.name === CLAIM)).toBe(false);
    await waitOrDiagnose(
      'the attachment pod gone',
      async () => ((await pods('kubevirt.io=hotplug-disk')).length === 0 ? true : undefined),
      120_000,
    );
    expect((await readVm()).status?.conditions?.find((c) => c.type === 'RestartRequired')).toBeUndefined();

    // The file on the volume: the pool's `volumes/<id>/disk` (an ext4 image), mounted read-only
    // here once the kubelet has let it go.
    const pv = await core.readPersistentVolume({ name: annotated.spec?.volumeName ?? '' });
    const volume = join(fx.csi!.pool.dir, 'volumes', pv.spec?.csi?.volumeHandle ?? '', 'disk');
    await waitOrDiagnose(
      'the volume unstaged',
      async () => ((await run('losetup', ['-j', volume])).stdout.trim() === '' ? true : undefined),
      60_000,
    );
    const mnt = mkdtempSync(join(tmpdir(), 'kvts-memdump-vol-'));
    await run('mount', ['-o', 'loop,ro', volume, mnt]);
    let header = '';
    let size = 0;
    try {
      const file = join(mnt, done.fileName ?? '');
      size = statSync(file).size;
      header = (await run('readelf', ['-h', '-l', '-W', file])).stdout;
    } finally {
      await run('umount', [mnt]);
      rmSync(mnt, { recursive: true, force: true });
    }
    expect(header).toMatch(/Type:\s+CORE \(Core file\)/);
    expect(header).toMatch(/Machine:\s+Advanced Micro Devices X86-64/);
    // The guest's RAM is one PT_LOAD from physical address 0 of its whole size.
    const ram = (GUEST_MIB * 1024 * 1024).toString(16);
    expect(header).toMatch(new RegExp(`^\\s+LOAD\\s+\\S+\\s+0x0+\\s+0x0+\\s+0x${ram}\\s`, 'm'));
    // The guest's RAM and the ELF notes and headers: between its RAM and RAM + 8 MiB.
    expect(size).toBeGreaterThanOrEqual(GUEST_MIB * 1024 * 1024);
    expect(size).toBeLessThan((GUEST_MIB + 8) * 1024 * 1024);

    // download: through a VirtualMachineExport of the claim, as a tar.gz holding the dump.
    // Not in fx.dir: the teardown deletes what that holds with kubectl.
    const outDir = mkdtempSync(join(tmpdir(), 'kvts-memdump-dl-'));
    const out = join(outDir, 'dump.tar.gz');
    let listing = '';
    try {
      const dl = await virtctl('memory-dump', 'download', VM, `--output=${out}`, '--port-forward');
      expect(dl.stdout).toContain('Memory dump completed successfully');
      listing = (await run('tar', ['-tzvf', out])).stdout;
    } finally {
      rmSync(outDir, { recursive: true, force: true });
    }
    expect(listing).toContain(done.fileName);
    expect(listing).toContain(String(size));
    await waitOrDiagnose(
      'the export gone',
      async () =>
        (
          (await custom.listNamespacedCustomObject({
            group: 'export.kubevirt.io',
            version: 'v1',
            plural: 'virtualmachineexports',
            namespace: NS,
          })) as { items: unknown[] }
        ).items.length === 0
          ? true
          : undefined,
      60_000,
    );

    // remove: dissociated, the template's volume gone.
    const rm = await virtctl('memory-dump', 'remove', VM);
    expect(rm.stdout).toBe(`Successfully submitted remove memory dump association of VM ${VM}\n`);
    await waitOrDiagnose(
      'the association gone',
      async () => {
        const vm = await readVm();
        return !vm.status?.memoryDumpRequest &&
          !vm.spec.template?.spec?.volumes?.some((v) => v.name === CLAIM)
          ? true
          : undefined;
      },
      60_000,
    );
    // The guest ran on throughout: the same VMI, still Running.
    const after = await readVmi();
    expect(after.metadata?.uid).toBe(vmiUid);
    expect(after.status?.phase).toBe('Running');
    const grep = kubectlExecAsync(info.kubeconfigPath, NS, launcher.metadata?.name ?? '', [
      'busybox',
      'grep',
      '-c',
      BOOT_MARKER,
      `/var/run/kubevirt-private/${vmiUid}/virt-serial0-log`,
    ]);
    await grep.exited;
    expect(grep.out().trim()).toBe('1');
    process.stdout.write(
      `memory dump of a ${GUEST_MIB} MiB guest: virtctl get to Completed in ${dumpMs.toFixed(0)} ms, file ${size} bytes\n`,
    );
  });
});
