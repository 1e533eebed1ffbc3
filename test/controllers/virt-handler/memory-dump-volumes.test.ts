/**
 * virt-handler's memory dump step (upstream updateMemoryDumpInfo / getMemoryDump) with
 * stubbed mounts and launcher: an attached memory dump volume's claim directory is
 * mounted into the launcher pod and the volume goes MemoryDumpInProgress with upstream's
 * target file name; the launcher is asked to dump (again until its report names the file);
 * its report makes the volume MemoryDumpCompleted or MemoryDumpFailed with the
 * timestamps; a volume taken out of the spec is unmounted. And the mount manager's
 * directory mounts on a scratch pods directory (bind mounts stubbed).
 */
import { mkdirSync, mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { VirtualMachineInstance, VolumeStatus } from '../../../src/api/generated/types';
import type { LauncherDomain } from '../../../src/controllers/launcher-protocol/domain-report';
import { HotplugMounts } from '../../../src/controllers/virt-handler/hotplug-mounts';
import { dumpTargetFile, memoryDumpStep } from '../../../src/controllers/virt-handler/memory-dump-volumes';

const dir = mkdtempSync(join(tmpdir(), 'kvts-md-handler-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const md = { name: 'dump', memoryDump: { claimName: 'dump', hotpluggable: true } };
const vmi = (volumes: object[], volumeStatus: VolumeStatus[]): VirtualMachineInstance =>
  ({
    metadata: { name: 'vm1', namespace: 'ns', uid: 'u' },
    spec: { domain: { devices: {} }, volumes },
    status: { phase: 'Running', volumeStatus },
  }) as unknown as VirtualMachineInstance;
const NOW = new Date('2026-12-04T21:30:05Z');
const FILE = 'vm1-dump-20261204-213005.memory.dump';
const LDIR = '/var/run/kubevirt/hotplug-disks';

function fakeMounts() {
  const log: string[] = [];
  const m = {
    claimDir: async (uid: string) =>
      uid === 'ap' ? '/pods/ap/volumes/kubernetes.io~csi/pv1/mount' : undefined,
    mountDir: async (src: string, pod: string, name: string) => void log.push(`mount ${src} ${pod} ${name}`),
    unmountDir: async (pod: string, name: string) => void log.push(`unmount ${pod} ${name}`),
  } as unknown as HotplugMounts;
  return { m, log };
}

describe('memoryDumpStep', () => {
  const attached: VolumeStatus = {
    name: 'dump',
    target: '',
    phase: 'AttachedToNode',
    hotplugVolume: { attachPodUID: 'ap' },
    memoryDumpVolume: { claimName: 'dump' },
  };

  it("names the file as upstream's dumpTargetFile", () => {
    expect(dumpTargetFile('vm1', 'dump', NOW)).toBe(FILE);
  });

  it('mounts the claim directory, goes InProgress with the target file, and asks the launcher to dump', async () => {
    const { m, log } = fakeMounts();
    const dumps: string[] = [];
    const r = await memoryDumpStep(
      vmi([md], [attached]),
      'lp',
      undefined,
      m,
      LDIR,
      async (p) => void dumps.push(p),
      () => NOW,
    );
    expect(log).toEqual(['mount /pods/ap/volumes/kubernetes.io~csi/pv1/mount lp dump']);
    expect(r.volumeStatus?.[0]).toMatchObject({
      phase: 'MemoryDumpInProgress',
      reason: 'VolumeMountedToPod',
      memoryDumpVolume: { claimName: 'dump', targetFileName: FILE },
    });
    expect(dumps).toEqual([`${LDIR}/dump/${FILE}`]);
    expect(r.waiting).toBe(true);
  });

  it('waits while the kubelet has not mounted the claim, and refuses a block claim on the volume', async () => {
    const { m, log } = fakeMounts();
    const r = await memoryDumpStep(
      vmi([md], [{ ...attached, hotplugVolume: { attachPodUID: 'other' } }]),
      'lp',
      undefined,
      m,
      LDIR,
      async () => {},
    );
    expect(log).toEqual([]);
    expect(r).toEqual({ volumeStatus: undefined, waiting: true });
    const block = await memoryDumpStep(
      vmi([md], [{ ...attached, persistentVolumeClaimInfo: { volumeMode: 'Block' } }]),
      'lp',
      undefined,
      m,
      LDIR,
      async () => {},
    );
    expect(block.volumeStatus?.[0]).toMatchObject({
      phase: 'AttachedToNode',
      reason: 'BlockMemoryDumpNotSupported',
    });
  });

  const inProgress: VolumeStatus = {
    ...attached,
    phase: 'MemoryDumpInProgress',
    memoryDumpVolume: { claimName: 'dump', targetFileName: FILE },
  };
  const report = (memoryDump: object) => ({ name: 'ns_vm1', memoryDump }) as unknown as LauncherDomain;

  it('takes the start time, then Completed (or Failed) with the end time, from the launcher report', async () => {
    const { m } = fakeMounts();
    const dumps: string[] = [];
    const ask = async (p: string) => void dumps.push(p);
    const other = await memoryDumpStep(
      vmi([md], [inProgress]),
      'lp',
      report({ fileName: 'old.memory.dump' }),
      m,
      LDIR,
      ask,
    );
    expect(dumps).toHaveLength(1);
    expect(other.volumeStatus).toBeUndefined();
    const started = report({ fileName: FILE, startTimestamp: 'T0', completed: false, failed: false });
    const r1 = await memoryDumpStep(vmi([md], [inProgress]), 'lp', started, m, LDIR, ask);
    expect(r1.volumeStatus?.[0]?.memoryDumpVolume).toEqual({
      claimName: 'dump',
      targetFileName: FILE,
      startTimestamp: 'T0',
    });
    expect(dumps).toHaveLength(1);
    const done = report({
      fileName: FILE,
      startTimestamp: 'T0',
      endTimestamp: 'T1',
      completed: true,
      failed: false,
    });
    const r2 = await memoryDumpStep(vmi([md], [inProgress]), 'lp', done, m, LDIR, ask);
    expect(r2.volumeStatus?.[0]).toMatchObject({
      phase: 'MemoryDumpCompleted',
      reason: 'VolumeReady',
      message: 'Memory dump to Volume dump has completed successfully',
      memoryDumpVolume: { startTimestamp: 'T0', endTimestamp: 'T1', targetFileName: FILE },
    });
    const failed = report({
      fileName: FILE,
      startTimestamp: 'T0',
      endTimestamp: 'T1',
      completed: true,
      failed: true,
      failureReason: 'Domain memory dump failed: no space',
    });
    const r3 = await memoryDumpStep(vmi([md], [inProgress]), 'lp', failed, m, LDIR, ask);
    expect(r3.volumeStatus?.[0]).toMatchObject({
      phase: 'MemoryDumpFailed',
      message: 'Memory dump to pvc dump failed: Domain memory dump failed: no space',
    });
  });

  it('unmounts a volume taken out of the spec', async () => {
    const { m, log } = fakeMounts();
    const detaching = { ...inProgress, phase: 'Detaching' };
    const r = await memoryDumpStep(vmi([], [detaching]), 'lp', undefined, m, LDIR, async () => {});
    expect(log).toEqual(['unmount lp dump']);
    expect(r.volumeStatus?.[0]).toMatchObject({ phase: 'UnMountedFromPod' });
  });
});

describe('HotplugMounts directories', () => {
  const mountinfo = join(dir, 'mountinfo');
  const calls: string[] = [];
  const mounts = new HotplugMounts({
    podsRoot: dir,
    mountinfo,
    run: async (c, a) => void calls.push([c, ...a].join(' ')),
  });
  it("bind-mounts the claim's directory onto <volume>/ in the launcher pod's hotplug emptyDir, and back", async () => {
    const src = join(dir, 'claim');
    mkdirSync(src);
    const emptyDir = join(dir, 'lp', 'volumes', 'kubernetes.io~empty-dir', 'hotplug-disks');
    mkdirSync(emptyDir, { recursive: true });
    writeFileSync(mountinfo, '');
    const target = mounts.dirTarget('lp', 'dump');
    expect(target).toBe(join(emptyDir, 'dump'));
    if (process.getuid?.() === 0) {
      await mounts.mountDir(src, 'lp', 'dump');
      expect(statSync(target).isDirectory()).toBe(true);
      expect(statSync(src).uid).toBe(107);
      expect(calls).toEqual([`mount --bind ${src} ${target}`]);
      writeFileSync(mountinfo, `101 1 0:50 / ${target} rw - xfs /dev/loop0 rw\n`);
      await mounts.mountDir(src, 'lp', 'dump');
      expect(calls).toHaveLength(1);
      let mounted = true;
      const m2 = new HotplugMounts({
        podsRoot: dir,
        mountinfo,
        run: async (c, a) => {
          calls.push([c, ...a].join(' '));
          mounted = false;
          writeFileSync(mountinfo, '');
        },
      });
      await m2.unmountAll('lp');
      expect(mounted).toBe(false);
      expect(calls.at(-1)).toBe(`umount ${target}`);
      expect(() => statSync(target)).toThrow();
    }
    expect(() => mounts.dirTarget('lp', '../x')).toThrow('is not a DNS-1123 label');
  });
});
