/**
 * The launcher's view of hotplugged disks (virt-launcher/hotplug-disks.ts) on a scratch
 * hotplug directory: a volume is ready when the node agent said so and its file
 * `<name>.img` or block device `<name>` (root: mknod) is there; a block device puts the
 * volume in the converter's block volumes, so its disk is rendered `type="block"`.
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../src/api/generated/types';
import { LauncherHotplug } from '../../../src/controllers/virt-launcher/hotplug-disks';

const dir = mkdtempSync(join(tmpdir(), 'kvts-launcher-hp-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const vol = (name: string) => ({ name, persistentVolumeClaim: { claimName: name, hotpluggable: true } });
const vmi = (phases: Record<string, string>): VirtualMachineInstance =>
  ({
    metadata: { name: 'vm1', namespace: 'ns' },
    spec: { domain: { devices: {} }, volumes: Object.keys(phases).map(vol) },
    status: { volumeStatus: Object.entries(phases).map(([name, phase]) => ({ name, phase })) },
  }) as unknown as VirtualMachineInstance;

describe.skipIf(process.getuid?.() !== 0)('LauncherHotplug.ready', () => {
  it('is ready for a mounted file or a block device, records the block ones, and ignores other kinds', async () => {
    const block = new Set<string>(['stale']);
    const hp = new LauncherHotplug(() => {}, dir, block);
    writeFileSync(join(dir, 'fs.img'), '');
    execFileSync('mknod', ['-m', '0660', join(dir, 'blk'), 'b', '7', '212']);
    writeFileSync(join(dir, 'plain'), ''); // neither <name>.img nor a device
    const phases = {
      fs: 'MountedToPod',
      blk: 'Ready',
      plain: 'MountedToPod',
      stale: 'MountedToPod',
      early: 'AttachedToNode',
    };
    writeFileSync(join(dir, 'early.img'), '');
    expect([...(await hp.ready(vmi(phases)))].sort()).toEqual(['blk', 'fs']);
    expect([...block]).toEqual(['blk']);
  });
});
