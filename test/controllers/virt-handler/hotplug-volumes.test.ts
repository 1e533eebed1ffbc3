/**
 * virt-handler's hotplug step with stubbed mounts and launcher: AttachedToNode is mounted
 * into the launcher pod (MountedToPod), the launcher is synced, Ready once the domain has
 * the disk; a volume taken out is detached by the sync and unmounted (UnMountedFromPod).
 * A block-mode claim goes through the block device step instead (refused on the volume
 * without one, or on a cgroup v2 node). And the mount manager on a scratch pods directory
 * (bind mounts stubbed).
 */
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { VirtualMachineInstance, VolumeStatus } from '../../../src/api/generated/types';
import type { LauncherDomain } from '../../../src/controllers/launcher-protocol/domain-report';
import { CgroupV2Error } from '../../../src/controllers/virt-handler/device-cgroup';
import type { BlockHotplug } from '../../../src/controllers/virt-handler/hotplug-block';
import { HotplugMounts } from '../../../src/controllers/virt-handler/hotplug-mounts';
import { hotplugStep } from '../../../src/controllers/virt-handler/hotplug-volumes';

const dir = mkdtempSync(join(tmpdir(), 'kvts-hp-handler-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const hp = { name: 'data', persistentVolumeClaim: { claimName: 'c', hotpluggable: true } };
const vmi = (volumes: object[], volumeStatus: VolumeStatus[]): VirtualMachineInstance =>
  ({
    metadata: { name: 'vm1', namespace: 'ns', uid: 'u' },
    spec: { domain: { devices: {} }, volumes },
    status: { phase: 'Running', volumeStatus },
  }) as unknown as VirtualMachineInstance;
const domain = (hot: string[]): LauncherDomain => ({ name: 'ns_vm1', hotplugVolumes: hot }) as LauncherDomain;

function fakeMounts() {
  const log: string[] = [];
  const m = {
    claimDir: async (uid: string) =>
      uid === 'ap' ? '/pods/ap/volumes/kubernetes.io~csi/pv1/mount' : undefined,
    diskImage: async (d: string) => `${d}/disk.img`,
    mount: async (src: string, pod: string, name: string) => void log.push(`mount ${src} ${pod} ${name}`),
    unmount: async (pod: string, name: string) => void log.push(`unmount ${pod} ${name}`),
  } as unknown as HotplugMounts;
  return { m, log };
}

describe('hotplugStep', () => {
  it('mounts an attached volume, syncs the launcher, and reports Ready once the domain has it', async () => {
    const { m, log } = fakeMounts();
    const synced: VirtualMachineInstance[] = [];
    const st = [{ name: 'data', target: '', phase: 'AttachedToNode', hotplugVolume: { attachPodUID: 'ap' } }];
    const r = await hotplugStep(vmi([hp], st), 'lp', domain([]), m, async (v) => {
      synced.push(v);
      return domain(['data']);
    });
    expect(log).toEqual(['mount /pods/ap/volumes/kubernetes.io~csi/pv1/mount/disk.img lp data']);
    // The launcher saw MountedToPod (it attaches only mounted volumes).
    expect(synced[0]?.status?.volumeStatus?.[0]?.phase).toBe('MountedToPod');
    expect(r.volumeStatus?.[0]).toMatchObject({ phase: 'Ready', reason: 'VolumeReady' });
    expect(r.waiting).toBe(false);
  });

  it('waits while the kubelet has not mounted the claim in the attachment pod', async () => {
    const { m, log } = fakeMounts();
    const st = [
      { name: 'data', target: '', phase: 'AttachedToNode', hotplugVolume: { attachPodUID: 'other' } },
    ];
    const r = await hotplugStep(vmi([hp], st), 'lp', domain([]), m, async () => domain([]));
    expect(log).toEqual([]);
    expect(r).toMatchObject({ waiting: true, volumeStatus: undefined });
  });

  it('detaches through the launcher, then unmounts a volume taken out of the spec', async () => {
    const { m, log } = fakeMounts();
    const st = [{ name: 'data', target: '', phase: 'Detaching', hotplugVolume: { attachPodUID: 'ap' } }];
    let syncs = 0;
    const r = await hotplugStep(vmi([], st), 'lp', domain(['data']), m, async () => {
      syncs++;
      return domain([]);
    });
    expect(syncs).toBe(1);
    expect(log).toEqual(['unmount lp data']);
    expect(r.volumeStatus?.[0]).toMatchObject({ phase: 'UnMountedFromPod' });
  });

  it('does nothing for a VMI without hotplug volumes', async () => {
    const { m } = fakeMounts();
    expect(await hotplugStep(vmi([], []), 'lp', domain([]), m, async () => undefined)).toEqual({
      waiting: false,
    });
  });
});

describe('hotplugStep with a block-mode claim', () => {
  const info = { claimName: 'c', volumeMode: 'Block' };
  const attached = [
    {
      name: 'data',
      target: '',
      phase: 'AttachedToNode',
      reason: 'SuccessfulCreate',
      hotplugVolume: { attachPodUID: 'ap' },
      persistentVolumeClaimInfo: info,
    },
  ];
  function fakeBlock(attach: () => Promise<boolean>) {
    const log: string[] = [];
    const b = {
      attach: async (ap: string, lp: string, name: string) => {
        log.push(`attach ${ap} ${lp} ${name}`);
        return attach();
      },
      detach: async (lp: string, name: string) => void log.push(`detach ${lp} ${name}`),
    } as unknown as BlockHotplug;
    return { b, log };
  }

  it('puts the device into the launcher pod (no file mount), syncs, and is Ready once the domain has it', async () => {
    const { m, log: mountLog } = fakeMounts();
    const { b, log } = fakeBlock(async () => true);
    const synced: VirtualMachineInstance[] = [];
    const r = await hotplugStep(
      vmi([hp], attached as VolumeStatus[]),
      'lp',
      domain([]),
      m,
      async (v) => {
        synced.push(v);
        return domain(['data']);
      },
      b,
    );
    expect(log).toEqual(['attach ap lp data']);
    expect(mountLog).toEqual([]);
    expect(synced[0]?.status?.volumeStatus?.[0]?.phase).toBe('MountedToPod');
    expect(r.volumeStatus?.[0]).toMatchObject({ phase: 'Ready', reason: 'VolumeReady' });
  });

  it('waits while the device is not in the attachment pod yet', async () => {
    const { m } = fakeMounts();
    const { b } = fakeBlock(async () => false);
    const r = await hotplugStep(
      vmi([hp], attached as VolumeStatus[]),
      'lp',
      domain([]),
      m,
      async () => domain([]),
      b,
    );
    expect(r).toMatchObject({ waiting: true, volumeStatus: undefined });
  });

  it('says on the volume why it cannot: no block step (local mode), or a cgroup v2 node; once', async () => {
    const { m } = fakeMounts();
    const local = await hotplugStep(vmi([hp], attached as VolumeStatus[]), 'lp', domain([]), m, async () =>
      domain([]),
    );
    expect(local.volumeStatus?.[0]).toMatchObject({
      phase: 'AttachedToNode',
      reason: 'BlockHotplugNotSupported',
      message:
        "Volume data: hotplugging a block-mode claim needs virt-handler on a kubelet node (the host's /proc and cgroups); use a Filesystem claim",
    });
    const { b } = fakeBlock(async () => {
      throw new CgroupV2Error('process 7 is in the unified (v2) cgroup hierarchy');
    });
    const v2 = await hotplugStep(
      vmi([hp], attached as VolumeStatus[]),
      'lp',
      domain([]),
      m,
      async () => domain([]),
      b,
    );
    expect(v2.volumeStatus?.[0]).toMatchObject({
      reason: 'BlockHotplugNotSupported',
      message:
        'Volume data: hotplugging a block-mode claim needs cgroup v1 device control on this node: process 7 is in the unified (v2) cgroup hierarchy; use a Filesystem claim',
    });
    expect(v2.waiting).toBe(false);
    // Said already: nothing to write again.
    const again = await hotplugStep(
      vmi([hp], v2.volumeStatus as VolumeStatus[]),
      'lp',
      domain([]),
      m,
      async () => domain([]),
      b,
    );
    expect(again.volumeStatus).toBeUndefined();
    // Another failure is not a refusal: it propagates (the handler retries).
    const { b: broken } = fakeBlock(async () => {
      throw new Error('EIO');
    });
    await expect(
      hotplugStep(vmi([hp], attached as VolumeStatus[]), 'lp', domain([]), m, async () => domain([]), broken),
    ).rejects.toThrow('EIO');
  });

  it('after the launcher detached it, removes the device (not a file unmount): UnMountedFromPod', async () => {
    const { m, log: mountLog } = fakeMounts();
    const { b, log } = fakeBlock(async () => true);
    const st = [{ ...attached[0], phase: 'Detaching' }] as VolumeStatus[];
    const r = await hotplugStep(vmi([], st), 'lp', domain(['data']), m, async () => domain([]), b);
    expect(log).toEqual(['detach lp data']);
    expect(mountLog).toEqual([]);
    expect(r.volumeStatus?.[0]).toMatchObject({ phase: 'UnMountedFromPod' });
  });
});

describe('HotplugMounts', () => {
  const pods = join(dir, 'pods');
  const calls: string[] = [];
  const mountinfo = join(dir, 'mountinfo');
  const mounts = new HotplugMounts({
    podsRoot: pods,
    mountinfo,
    run: async (c, a) => void calls.push([c, ...a].join(' ')),
  });

  it('finds the claim under the attachment pod (CSI mount dir), creates a sized disk.img, binds it into the launcher', async () => {
    const csi = join(pods, 'ap1', 'volumes', 'kubernetes.io~csi', 'pv-1', 'mount');
    mkdirSync(csi, { recursive: true });
    mkdirSync(join(pods, 'lp1', 'volumes', 'kubernetes.io~empty-dir', 'hotplug-disks'), { recursive: true });
    writeFileSync(mountinfo, '');
    expect(await mounts.claimDir('ap1')).toBeUndefined();
    writeFileSync(mountinfo, `100 1 0:50 / ${csi} rw - xfs /dev/loop0 rw\n`);
    expect(await mounts.claimDir('ap1')).toBe(csi);
    const img = await mounts
      .diskImage(csi, { claimName: 'c', capacity: { storage: '64Mi' }, requests: { storage: '64Mi' } }, 'f')
      .catch((e: Error) => {
        // Not root: the chown to QEMU's user fails after the image was made.
        if (!/EPERM/.test(e.message)) throw e;
        return join(csi, 'disk.img');
      });
    expect(statSync(img).size).toBe(64 * 1024 * 1024);
    await mounts.mount(img, 'lp1', 'data');
    const target = join(pods, 'lp1', 'volumes', 'kubernetes.io~empty-dir', 'hotplug-disks', 'data.img');
    expect(calls).toEqual([`mount --bind ${img} ${target}`]);
    expect(statSync(target).isFile()).toBe(true);
    expect(() => mounts.target('lp1', '../x')).toThrow('is not a DNS-1123 label');
    await expect(mounts.claimDir('../etc')).rejects.toThrow('is not a plain token');
  });

  it('unmounts and removes every disk file of a launcher pod', async () => {
    const target = join(pods, 'lp1', 'volumes', 'kubernetes.io~empty-dir', 'hotplug-disks', 'data.img');
    calls.length = 0;
    writeFileSync(mountinfo, `101 1 0:50 / ${target} rw - xfs /dev/loop0 rw\n`);
    const m2 = new HotplugMounts({
      podsRoot: pods,
      mountinfo,
      run: async (c, a) => {
        calls.push([c, ...a].join(' '));
        writeFileSync(mountinfo, '');
      },
    });
    await m2.unmountAll('lp1');
    expect(calls).toEqual([`umount ${target}`]);
    expect(() => statSync(target)).toThrow();
  });
});
