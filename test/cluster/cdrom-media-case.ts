/**
 * CD-ROM inject and eject on the real cluster (upstream's DeclarativeHotplugVolumes), run by
 * volume-hotplug.test.ts on its guest once the hotplug disk is gone: the VM was created
 * with an empty SATA cdrom drive `cd`; the guest loads its CD-ROM drivers (guest recipe 11)
 * and reads "No medium found" from /dev/sr0. An edit of the VM's spec adds a hotpluggable
 * volume `cd` on the claim the guest wrote its marker to: an attachment pod, the handler's
 * mount, the launcher's media change; the guest reads the claim's size and the marker from
 * /dev/sr0. Taking the volume out of the spec ejects it: "No medium found" again, the
 * drive still there, the status entry and attachment pod gone.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { expect } from 'vitest';
import type { VolumeStatus } from '../../src/api/generated/types';
import type { SerialConsole } from '../support/guest';

export interface CdromCaseContext {
  con: SerialConsole;
  /** A JSON patch of the VM. */
  patchVm: (ops: object[]) => Promise<unknown>;
  volumeStatus: (name: string) => Promise<VolumeStatus | undefined>;
  pods: (selector: string) => Promise<V1Pod[]>;
  waitOrDiagnose: <T>(
    what: string,
    f: () => Promise<T | undefined>,
    ms: number,
    every?: number,
  ) => Promise<T>;
  claim: string;
  /** The claim's size, the marker and the 512-byte sector the guest wrote it at. */
  size: number;
  marker: string;
  sector: number;
}

/** The empty drive the VM is created with. */
export const CDROM_DRIVE = { name: 'cd', cdrom: { bus: 'sata' } };

/** Inserts the claim as the drive's media and ejects it; resolves with the times (ms). */
export async function cdromMediaCase(c: CdromCaseContext): Promise<{ insertMs: number; ejectMs: number }> {
  const { con } = c;
  await con.run('/etc/load-cdrom');
  await c.waitOrDiagnose(
    'the guest sees the cdrom drive',
    async () => ((await con.run('ls /sys/block')).includes('sr0') ? true : undefined),
    30_000,
    300,
  );
  const read = () =>
    con.run(`dd if=/dev/sr0 bs=2048 skip=${(c.sector * 512) / 2048} count=1 2>&1 | head -c 60; echo`);
  expect(await read()).toMatch(/No medium found/);

  const media = { name: CDROM_DRIVE.name, persistentVolumeClaim: { claimName: c.claim, hotpluggable: true } };
  const t0 = performance.now();
  await c.patchVm([{ op: 'add', path: '/spec/template/spec/volumes/-', value: media }]);
  await c.waitOrDiagnose(
    'the media in the guest',
    async () => ((await read()).includes(c.marker) ? true : undefined),
    180_000,
    500,
  );
  const insertMs = performance.now() - t0;
  expect(Number((await con.run('cat /sys/block/sr0/size')).trim()) * 512).toBe(c.size);
  const ready = await c.waitOrDiagnose(
    'the media volume Ready',
    async () => {
      const s = await c.volumeStatus(CDROM_DRIVE.name);
      return s?.phase === 'Ready' ? s : undefined;
    },
    60_000,
  );
  expect(ready.hotplugVolume?.attachPodName).toMatch(/^hp-volume-/);

  const t1 = performance.now();
  await c.patchVm([
    { op: 'test', path: '/spec/template/spec/volumes/1', value: media },
    { op: 'remove', path: '/spec/template/spec/volumes/1' },
  ]);
  await c.waitOrDiagnose(
    'the media ejected',
    async () => (/No medium found/.test(await read()) ? true : undefined),
    120_000,
    500,
  );
  const ejectMs = performance.now() - t1;
  await c.waitOrDiagnose(
    'the media volume status and attachment pod gone',
    async () =>
      !(await c.volumeStatus(CDROM_DRIVE.name)) && (await c.pods('kubevirt.io=hotplug-disk')).length === 0
        ? true
        : undefined,
    120_000,
    500,
  );
  expect((await con.run('ls /sys/block')).split(/\s+/)).toContain('sr0');
  return { insertMs, ejectMs };
}
