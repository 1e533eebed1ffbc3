/**
 * Issue 28's volume hotplug on the real one-node cluster, with a real guest: the
 * components from the manifests, the project's CSI driver in this process with the real
 * csi-provisioner (test/cluster/csi-stack.ts). The tiny guest boots from its containerDisk;
 * a PVC of the CSI driver is hot-added with `virtctl addvolume --serial --bus virtio`
 * (virt-api's VM subresource, the VM controller carrying the template's volume to the
 * VMI, an `hp-volume-*` attachment pod mounting the claim on the node, virt-handler
 * bind-mounting its disk.img into the launcher pod, the launcher attaching it through
 * libvirt). In the guest `/sys/block/<dev>/serial` shows the serial and the size is the
 * claim's; the guest writes to it; `virtctl removevolume` makes the disk disappear from
 * the guest, and the attachment pod goes (before that, its eviction is refused: virt-api's
 * webhook through the kube-apiserver); an edit of the VM's spec adds it again (another
 * serial; the guest reads back what it wrote) and takes it away; the data is in the
 * volume's disk.img in the pool; the same claim is then inserted into the VM's empty
 * CD-ROM drive and ejected (cdrom-media-case.ts). The guest boots once. Prints `BENCH hotplug volume_attach_ms= volume_detach_ms=`
 * beside the launcher's own libvirt attach/detach time of the same operations.
 *
 * The driver's one name registers once with a kubelet: like the other CSI cluster test
 * files, this one takes the host lock `csi-driver` for its whole run (test/support/host-lock.ts).
 */
import { execFile } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { CoreV1Api, CustomObjectsApi, V1Pod } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { ClusterInfo } from '../../scripts/cluster/state';
import type { VirtualMachine, VirtualMachineInstance } from '../../src/api/generated/types';
import { kubectlBin, kubectlExecAsync } from '../support/cluster-pods';
import { BOOT_MARKER } from '../support/guest';
import { diskImageLine } from '../support/volume-image';
import { blockHotplugCase } from './block-hotplug-case';
import { CDROM_DRIVE, cdromMediaCase } from './cdrom-media-case';
import { csiClusterTestsEnabled } from './csi-stack';
import { oneDiskVm, storageClusterFixture } from './storage-cluster';

const enabled = csiClusterTestsEnabled('volume hotplug on the cluster');
const NS = 'cluster-hotplug';
const VM = 'vm-hp';
const CLAIM = 'hp-data';
const SERIAL = 'HPSERIAL7';
const SIZE = 32 * 1024 * 1024;
const SECTOR = 4096;
const KV = { group: 'kubevirt.io', version: 'v1' };
const virtctlBin = new URL('../../dist/cli/virtctl.js', import.meta.url).pathname;
const run = promisify(execFile);

describe.skipIf(!enabled)('volume hotplug on the real cluster', () => {
  const fx = storageClusterFixture({ namespace: NS, tmpPrefix: 'kvts-hotplug-' });
  let info: ClusterInfo;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let dir = '';

  // The CSI driver answers in this process: every external command runs asynchronously.
  const virtctl = (...args: string[]) =>
    run(process.execPath, [virtctlBin, ...args, '-n', NS, '--kubeconfig', info.kubeconfigPath], {
      timeout: 60_000,
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
  const waitOrDiagnose = <T>(what: string, f: () => Promise<T | undefined>, ms: number, every = 250) =>
    fx.waitOrDiagnose(what, f, ms, every, async () => {
      const vmi = await readVmi().catch(() => undefined);
      return `volumeStatus: ${JSON.stringify(vmi?.status?.volumeStatus)}\n${await fx.diagnose(['virt-handler'], 25)}`;
    });
  const volumeStatus = async (name: string) =>
    (await readVmi()).status?.volumeStatus?.find((s) => s.name === name);

  beforeAll(async () => {
    await fx.setUp();
    ({ info, core, custom, dir } = fx);
  }, 1_200_000);
  afterAll(() => fx.tearDown(), 400_000);

  it('hot-adds a CSI PVC with a serial, the guest writes to it, removevolume takes it away; one boot', {
    timeout: 600_000,
  }, async () => {
    const apply = (file: string, obj: object) => {
      writeFileSync(join(dir, file), stringify(obj));
      return run(kubectlBin, ['--kubeconfig', info.kubeconfigPath, 'apply', '-f', join(dir, file)]);
    };
    await apply('claim.yaml', {
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: CLAIM, namespace: NS },
      spec: {
        accessModes: ['ReadWriteOnce'],
        storageClassName: 'kubevirt-ts-local',
        resources: { requests: { storage: '32Mi' } },
      },
    });
    const vmObject = oneDiskVm({
      name: VM,
      namespace: NS,
      volume: {
        containerDisk: {
          image: 'localhost/kubevirt-ts/tiny-guest-containerdisk:latest',
          imagePullPolicy: 'Never',
        },
      },
    }) as { spec: { template: { spec: { domain: { devices: { disks: object[] } } } } } };
    // An empty CD-ROM drive for the media case (cdrom-media-case.ts).
    vmObject.spec.template.spec.domain.devices.disks.push(CDROM_DRIVE);
    await apply('vm.yaml', vmObject);
    const launcher = await waitOrDiagnose(
      'launcher pod Running',
      async () => (await pods('kubevirt.io=virt-launcher')).find((p) => p.status?.phase === 'Running'),
      240_000,
      1000,
    );
    const con = await fx.launcherConsole(launcher);
    let attachMs = 0;
    let detachMs = 0;
    let marker = '';
    let cdrom = { insertMs: 0, ejectMs: 0 };
    try {
      await con.waitFor(BOOT_MARKER, 180_000);
      await waitOrDiagnose(
        'VMI Running',
        async () => ((await readVmi()).status?.phase === 'Running' ? true : undefined),
        60_000,
      );
      const disks = () => con.run('for d in /sys/block/vd*; do echo "$(basename $d) $(cat $d/serial)"; done');
      expect(await disks()).not.toContain(SERIAL);

      // Hot-add: virtctl -> virt-api -> VM template -> VMI -> attachment pod -> handler -> launcher.
      const t0 = performance.now();
      const out = await virtctl(
        'addvolume',
        VM,
        `--volume-name=${CLAIM}`,
        `--serial=${SERIAL}`,
        '--bus=virtio',
      );
      expect(out.stdout).toBe(`Successfully submitted add volume request to VM ${VM} for volume ${CLAIM}\n`);
      const line = await waitOrDiagnose(
        'the disk in the guest',
        async () => (await disks()).split('\n').find((l) => l.endsWith(` ${SERIAL}`)),
        180_000,
        500,
      );
      attachMs = performance.now() - t0;
      const dev = line.split(' ')[0] ?? '';
      expect(dev).toMatch(/^vd[b-z]$/);
      expect(Number((await con.run(`cat /sys/block/${dev}/size`)).trim()) * 512).toBe(SIZE);
      // The template has it (declarative), the VMI got it, and the volume is Ready.
      expect((await readVm()).spec.template?.spec?.volumes?.[1]).toEqual({
        name: CLAIM,
        persistentVolumeClaim: { claimName: CLAIM, hotpluggable: true },
      });
      const ready = await waitOrDiagnose(
        'volume Ready',
        async () => {
          const s = await volumeStatus(CLAIM);
          return s?.phase === 'Ready' ? s : undefined;
        },
        60_000,
      );
      const attach = (await pods('kubevirt.io=hotplug-disk'))[0] as V1Pod;
      expect(attach.metadata?.name).toMatch(/^hp-volume-/);
      expect(attach.metadata?.ownerReferences?.[0]).toMatchObject({
        kind: 'Pod',
        name: launcher.metadata?.name,
      });
      expect(ready.hotplugVolume).toEqual({
        attachPodName: attach.metadata?.name,
        attachPodUID: attach.metadata?.uid,
      });
      expect((await readVm()).status?.conditions?.find((c) => c.type === 'RestartRequired')).toBeUndefined();

      // The guest writes to it.
      marker = `KVTS-HOTPLUG-${Date.now()}`;
      await con.run(
        `echo ${marker} | dd of=/dev/${dev} bs=512 seek=${SECTOR} conv=notrunc,fsync 2>/dev/null; sync`,
      );

      // A drain's eviction of the attachment pod is refused while the VMI runs (virt-api's
      // eviction webhook, reached through the kube-apiserver); the pod and the disk stay.
      writeFileSync(
        join(dir, 'eviction.json'),
        JSON.stringify({
          apiVersion: 'policy/v1',
          kind: 'Eviction',
          metadata: { name: attach.metadata?.name, namespace: NS },
        }),
      );
      const evicted = await run(kubectlBin, [
        '--kubeconfig',
        info.kubeconfigPath,
        'create',
        '--raw',
        `/api/v1/namespaces/${NS}/pods/${attach.metadata?.name}/eviction`,
        '-f',
        join(dir, 'eviction.json'),
      ]).then(
        () => 'evicted',
        (e: { stderr?: string }) => e.stderr ?? '',
      );
      expect(evicted).toContain(
        `cannot evict hotplug pod: ${attach.metadata?.name} associated with running vmi: ${VM} in namespace ${NS}`,
      );
      expect((await pods('kubevirt.io=hotplug-disk')).map((p) => p.metadata?.uid)).toEqual([
        attach.metadata?.uid,
      ]);
      expect(await disks()).toContain(SERIAL);

      // Remove: detached from the guest, unmounted, the attachment pod deleted.
      const t1 = performance.now();
      await virtctl('removevolume', VM, `--volume-name=${CLAIM}`);
      await waitOrDiagnose(
        'the disk gone from the guest',
        async () => ((await disks()).includes(SERIAL) ? undefined : true),
        120_000,
        500,
      );
      detachMs = performance.now() - t1;
      await waitOrDiagnose(
        'volume status and attachment pod gone',
        async () =>
          !(await volumeStatus(CLAIM)) && (await pods('kubevirt.io=hotplug-disk')).length === 0
            ? true
            : undefined,
        120_000,
        500,
      );

      // The same through an edit of the VM's spec (DeclarativeHotplugVolumes), another serial.
      const patchVm = (ops: object[]) =>
        run(kubectlBin, [
          '--kubeconfig',
          info.kubeconfigPath,
          '-n',
          NS,
          'patch',
          'vm',
          VM,
          '--type=json',
          '-p',
          JSON.stringify(ops),
        ]);
      const volume = { name: CLAIM, persistentVolumeClaim: { claimName: CLAIM, hotpluggable: true } };
      const disk = { name: CLAIM, disk: { bus: 'virtio' }, serial: `${SERIAL}B` };
      await patchVm([
        { op: 'add', path: '/spec/template/spec/volumes/-', value: volume },
        { op: 'add', path: '/spec/template/spec/domain/devices/disks/-', value: disk },
      ]);
      const again = await waitOrDiagnose(
        'the disk back in the guest',
        async () => (await disks()).split('\n').find((l) => l.endsWith(` ${SERIAL}B`)),
        180_000,
        500,
      );
      // What the guest wrote is still there.
      const dev2 = again.split(' ')[0] ?? '';
      expect(
        (await con.run(`dd if=/dev/${dev2} bs=512 skip=${SECTOR} count=1 2>/dev/null | head -n1`)).trim(),
      ).toBe(marker);
      await patchVm([
        { op: 'test', path: '/spec/template/spec/volumes/1', value: volume },
        { op: 'remove', path: '/spec/template/spec/volumes/1' },
        // disks: root, the CD-ROM drive, this one.
        { op: 'remove', path: '/spec/template/spec/domain/devices/disks/2' },
      ]);
      await waitOrDiagnose(
        'the disk gone again',
        async () =>
          !(await disks()).includes(SERIAL) &&
          !(await volumeStatus(CLAIM)) &&
          (await pods('kubevirt.io=hotplug-disk')).length === 0
            ? true
            : undefined,
        120_000,
        500,
      );

      // CD-ROM media: the claim inserted into the empty drive, then ejected.
      cdrom = await cdromMediaCase({
        con,
        patchVm,
        volumeStatus,
        pods,
        waitOrDiagnose,
        claim: CLAIM,
        size: SIZE,
        marker,
        sector: SECTOR,
      });

      // A block-mode claim on the same guest (./block-hotplug-case).
      await blockHotplugCase({
        kubeconfig: info.kubeconfigPath,
        namespace: NS,
        vm: VM,
        dir,
        core,
        launcher,
        readVmi,
        pods,
        podsRoot: join(info.stateDir, 'kubelet', 'pods'),
        poolDir: fx.csi?.pool.dir ?? '',
        guest: (cmd) => con.run(cmd),
        waitOrDiagnose,
      });
    } finally {
      con.close();
    }
    // The data is on the PVC: the volume's filesystem (the pool's `volumes/<id>/disk`,
    // mounted read-only here once the kubelet has let it go) holds disk.img with the line.
    const claim = await core.readNamespacedPersistentVolumeClaim({ name: CLAIM, namespace: NS });
    const pv = await core.readPersistentVolume({ name: claim.spec?.volumeName ?? '' });
    const volume = join(fx.csi!.pool.dir, 'volumes', pv.spec?.csi?.volumeHandle ?? '', 'disk');
    await waitOrDiagnose(
      'the volume unstaged',
      async () => ((await run('losetup', ['-j', volume])).stdout.trim() === '' ? true : undefined),
      60_000,
      500,
    ).catch(async (e) => {
      // Who still holds the volume's loop device: every mount namespace with a mount of it.
      const loops = (await run('losetup', ['-j', volume])).stdout;
      const dev = /^(\/dev\/loop\d+)/.exec(loops)?.[1] ?? 'none';
      const held = await run('sh', [
        '-c',
        `for f in /proc/[0-9]*/mountinfo; do p=\${f%/mountinfo}; if grep -q ' ${dev} ' $f 2>/dev/null; then echo "== $p $(readlink $p/ns/mnt) $(tr '\\0' ' ' < $p/cmdline | head -c 200)"; grep ' ${dev} ' $f; fi; done | head -80`,
      ]);
      throw new Error(`${e}\nloop: ${loops}\nholders:\n${held.stdout}`);
    });
    expect(await diskImageLine(volume, SECTOR * 512)).toBe(marker);
    // One boot (the console log holds the marker once).
    const vmiUid = launcher.metadata?.labels?.['kubevirt.io/created-by'];
    const grep = kubectlExecAsync(info.kubeconfigPath, NS, launcher.metadata?.name ?? '', [
      'busybox',
      'grep',
      '-c',
      BOOT_MARKER,
      `/var/run/kubevirt-private/${vmiUid}/virt-serial0-log`,
    ]);
    await grep.exited;
    expect(grep.out().trim()).toBe('1');
    // The reference measured in the same run: the launcher's own libvirt attach/detach time.
    const logs = (
      await run(kubectlBin, [
        '--kubeconfig',
        info.kubeconfigPath,
        'logs',
        '-n',
        NS,
        launcher.metadata?.name ?? '',
        '-c',
        'compute',
      ])
    ).stdout;
    const libvirtMs = (what: 'attached' | 'detached') =>
      logs
        .split('\n')
        .map((l) => /hotplug: attached \[(.*?)\] detached \[(.*?)\] in (\d+) ms/.exec(l))
        .find((m) => m && (what === 'attached' ? m[1] : m[2]) === CLAIM)?.[3];
    process.stdout.write(
      `BENCH hotplug volume_attach_ms=${attachMs.toFixed(0)} volume_detach_ms=${detachMs.toFixed(0)} libvirt_attach_ms=${libvirtMs('attached') ?? 'n/a'} libvirt_detach_ms=${libvirtMs('detached') ?? 'n/a'} cdrom_insert_ms=${cdrom.insertMs.toFixed(0)} cdrom_eject_ms=${cdrom.ejectMs.toFixed(0)}\n`,
    );
  });
});
