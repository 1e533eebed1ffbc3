/**
 * Block-mode claim hotplug on the real cluster, run by test/cluster/volume-hotplug.test.ts
 * on its running tiny guest: a `volumeMode: Block` claim of `kubevirt-ts-local` added to
 * the VM's template by a JSON patch (a hotpluggable PVC volume and a virtio disk with a
 * serial). The attachment pod maps the device under its `hotplug-disks` emptyDir;
 * virt-handler makes a node of the same numbers at `hotplug-disks/<volume>` in the launcher
 * pod (owned by 107) and allows it in the compute container's devices cgroup (cgroup v1);
 * the launcher attaches it as a `block` disk. Asserted: the guest's `/sys/block/<dev>/serial`
 * and size, the node and the cgroup rule in the launcher pod, the volume Ready; the guest
 * writes a marker with dd; a second patch removes it: the disk leaves the guest, the node
 * and the rule are gone, so are the status entry and the attachment pod; the marker is in
 * the pool's volume file once the kubelet has released the claim.
 */
import { execFile } from 'node:child_process';
import { closeSync, lstatSync, openSync, readSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type { CoreV1Api, V1Pod } from '@kubernetes/client-node';
import { expect } from 'vitest';
import { stringify } from 'yaml';
import type { VirtualMachineInstance } from '../../src/api/generated/types';
import { podEmptyDirPath } from '../../src/controllers/launcher-protocol/paths';
import { kubectlBin, kubectlExecAsync } from '../support/cluster-pods';

const run = promisify(execFile);
const CLAIM = 'hp-block';
const SERIAL = 'HPBLOCK1';
const SIZE = 16 * 1024 * 1024;
const SECTOR = 2048;

export interface BlockHotplugCaseContext {
  kubeconfig: string;
  namespace: string;
  vm: string;
  /** A scratch directory for manifests. */
  dir: string;
  /** The kubelet's pods directory of the node (the host's view). */
  podsRoot: string;
  /** The CSI pool's directory (volumes/<id>/disk). */
  poolDir: string;
  core: CoreV1Api;
  launcher: V1Pod;
  /** A shell command in the guest (its serial console). */
  guest: (cmd: string) => Promise<string>;
  readVmi: () => Promise<VirtualMachineInstance>;
  pods: (selector: string) => Promise<V1Pod[]>;
  waitOrDiagnose: <T>(
    what: string,
    f: () => Promise<T | undefined>,
    ms: number,
    every?: number,
  ) => Promise<T>;
}

/**
 * Runs the case; prints and resolves with the attach and detach times (ms, from the
 * `kubectl patch` to the guest's view of the disk).
 */
export async function blockHotplugCase(
  c: BlockHotplugCaseContext,
): Promise<{ attachMs: number; detachMs: number }> {
  const kubectl = (...args: string[]) =>
    run(kubectlBin, ['--kubeconfig', c.kubeconfig, '-n', c.namespace, ...args]);
  const compute = async (...cmd: string[]) => {
    const x = kubectlExecAsync(c.kubeconfig, c.namespace, c.launcher.metadata?.name ?? '', cmd);
    await x.exited;
    return x.out();
  };
  writeFileSync(
    join(c.dir, 'block-claim.yaml'),
    stringify({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: CLAIM, namespace: c.namespace },
      spec: {
        accessModes: ['ReadWriteOnce'],
        volumeMode: 'Block',
        storageClassName: 'kubevirt-ts-local',
        resources: { requests: { storage: '16Mi' } },
      },
    }),
  );
  await kubectl('apply', '-f', join(c.dir, 'block-claim.yaml'));
  const disks = () => c.guest('for d in /sys/block/vd*; do echo "$(basename $d) $(cat $d/serial)"; done');
  const patchVm = (ops: object[]) => kubectl('patch', 'vm', c.vm, '--type=json', '-p', JSON.stringify(ops));
  const volume = { name: CLAIM, persistentVolumeClaim: { claimName: CLAIM, hotpluggable: true } };
  const status = async () => (await c.readVmi()).status?.volumeStatus?.find((s) => s.name === CLAIM);

  // Plug: the template gets the volume and its disk.
  const t0 = performance.now();
  await patchVm([
    { op: 'add', path: '/spec/template/spec/volumes/-', value: volume },
    {
      op: 'add',
      path: '/spec/template/spec/domain/devices/disks/-',
      value: { name: CLAIM, disk: { bus: 'virtio' }, serial: SERIAL },
    },
  ]);
  const line = await c.waitOrDiagnose(
    'the block disk in the guest',
    async () => (await disks()).split('\n').find((l) => l.endsWith(` ${SERIAL}`)),
    180_000,
    500,
  );
  const attachMs = performance.now() - t0;
  const dev = line.split(' ')[0] ?? '';
  expect(dev).toMatch(/^vd[b-z]$/);
  expect(Number((await c.guest(`cat /sys/block/${dev}/size`)).trim()) * 512).toBe(SIZE);
  const ready = await c.waitOrDiagnose(
    'block volume Ready',
    async () => {
      const s = await status();
      return s?.phase === 'Ready' ? s : undefined;
    },
    60_000,
  );
  expect(ready.persistentVolumeClaimInfo?.volumeMode).toBe('Block');
  const attach = (await c.pods('kubevirt.io=hotplug-disk')).find(
    (p) => p.metadata?.uid === ready.hotplugVolume?.attachPodUID,
  );
  expect(attach?.spec?.containers[0]?.volumeDevices).toEqual([
    { name: 'hotplug', devicePath: `/path/${CLAIM}/disk` },
  ]);

  // The node in the launcher pod (no .img), owned by QEMU's user, allowed in its cgroup.
  const node = join(podEmptyDirPath(c.podsRoot, c.launcher.metadata?.uid ?? '', 'hotplug-disks'), CLAIM);
  const st = lstatSync(node, { bigint: true });
  expect(st.isBlockDevice()).toBe(true);
  expect([st.uid, st.gid]).toEqual([107n, 107n]);
  const major = Number((st.rdev >> 8n) & 0xfffn);
  const minor = Number((st.rdev & 0xffn) | ((st.rdev >> 12n) & ~0xffn));
  const rule = `b ${major}:${minor} rwm`;
  const devicesList = () => compute('busybox', 'cat', '/sys/fs/cgroup/devices/devices.list');
  expect((await devicesList()).split('\n')).toContain(rule);

  // The guest writes to it.
  const marker = `KVTS-BLOCK-${Date.now()}`;
  await c.guest(
    `echo ${marker} | dd of=/dev/${dev} bs=512 seek=${SECTOR} conv=notrunc,fsync 2>/dev/null; sync`,
  );

  // Unplug: out of the guest, the node and the rule gone, then the status entry and the pod.
  const t1 = performance.now();
  // By name: the VM may have other disks (the empty CD-ROM drive of the media case).
  const vm = JSON.parse((await kubectl('get', 'vm', c.vm, '-o', 'json')).stdout) as {
    spec: {
      template: { spec: { volumes: { name: string }[]; domain: { devices: { disks: { name: string }[] } } } };
    };
  };
  const t = vm.spec.template.spec;
  const v = t.volumes.findIndex((x) => x.name === CLAIM);
  const d = t.domain.devices.disks.findIndex((x) => x.name === CLAIM);
  await patchVm([
    { op: 'test', path: `/spec/template/spec/volumes/${v}`, value: volume },
    { op: 'remove', path: `/spec/template/spec/volumes/${v}` },
    { op: 'test', path: `/spec/template/spec/domain/devices/disks/${d}/name`, value: CLAIM },
    { op: 'remove', path: `/spec/template/spec/domain/devices/disks/${d}` },
  ]);
  await c.waitOrDiagnose(
    'the block disk gone from the guest',
    async () => ((await disks()).includes(SERIAL) ? undefined : true),
    120_000,
    500,
  );
  const detachMs = performance.now() - t1;
  await c.waitOrDiagnose(
    'block volume status and attachment pod gone',
    async () =>
      !(await status()) && (await c.pods('kubevirt.io=hotplug-disk')).length === 0 ? true : undefined,
    120_000,
    500,
  );
  expect(() => lstatSync(node)).toThrow('ENOENT');
  expect((await devicesList()).split('\n')).not.toContain(rule);

  // The marker is on the claim: the pool's volume file, once the kubelet let the claim go.
  const claim = await c.core.readNamespacedPersistentVolumeClaim({ name: CLAIM, namespace: c.namespace });
  const pv = await c.core.readPersistentVolume({ name: claim.spec?.volumeName ?? '' });
  const file = join(c.poolDir, 'volumes', pv.spec?.csi?.volumeHandle ?? '', 'disk');
  await c.waitOrDiagnose(
    'the block volume released',
    async () => ((await run('losetup', ['-j', file])).stdout.trim() === '' ? true : undefined),
    60_000,
    500,
  );
  const buf = Buffer.alloc(64);
  const fd = openSync(file, 'r');
  try {
    readSync(fd, buf, 0, buf.length, SECTOR * 512);
  } finally {
    closeSync(fd);
  }
  expect(buf.toString('utf8').split('\n')[0]).toBe(marker);
  process.stdout.write(
    `BENCH hotplug block_volume_attach_ms=${attachMs.toFixed(0)} block_volume_detach_ms=${detachMs.toFixed(0)}\n`,
  );
  return { attachMs, detachMs };
}
