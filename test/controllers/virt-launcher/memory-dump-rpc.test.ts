/**
 * The launcher's VirtualMachineMemoryDump over the fake driver (which writes an ELF core
 * header and the guest's memory size, sparse): the dump runs in the background and its
 * state is reported (start, end, completed, failed); a repeat of the same file is a no-op;
 * earlier dumps in the volume go; a path outside `<hotplug dir>/<volume>/*.memory.dump` is
 * refused; a driver failure is reported as upstream's "Domain memory dump failed".
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../src/api/generated/types';
import { LauncherMemoryDump } from '../../../src/controllers/virt-launcher/memory-dump-rpc';
import { FakeDriver } from '../../../src/drivers/fake';
import { waitFor } from '../../support/wait';

const dir = mkdtempSync(join(tmpdir(), 'kvts-md-launcher-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const vmi = {
  metadata: { name: 'v', namespace: 'ns', uid: 'u' },
  spec: { domain: { devices: {}, resources: { requests: { memory: '64Mi' } } } },
} as VirtualMachineInstance;

describe('LauncherMemoryDump', () => {
  const driver = new FakeDriver();
  const logs: string[] = [];
  let changes = 0;
  const md = new LauncherMemoryDump({
    driver: () => driver,
    ref: () => ({ namespace: 'ns', name: 'v' }),
    log: (m) => void logs.push(m),
    onChange: () => void changes++,
    podHotplugDir: dir,
    now: () => new Date('2026-12-04T21:30:05.123Z'),
  });
  const vol = join(dir, 'dump');
  mkdirSync(vol);

  it('refuses a path that is not a .memory.dump file directly in a volume directory of the hotplug dir', async () => {
    for (const p of [
      'relative/x.memory.dump',
      `${dir}/dump/../../etc/x.memory.dump`,
      `${dir}/x.memory.dump`,
      `${dir}/dump/sub/x.memory.dump`,
      `${dir}/Dump_/x.memory.dump`,
      `${dir}/dump/x.img`,
      '/etc/dump/x.memory.dump',
    ])
      await expect(md.request(p), p).rejects.toThrow('memory dump path');
  });

  it('dumps in the background and reports the state; a repeat is a no-op; older dumps go', async () => {
    await driver.sync(vmi, { useEmulation: true });
    writeFileSync(join(vol, 'v-dump-old.memory.dump'), 'old');
    writeFileSync(join(vol, 'keep.txt'), 'x');
    const path = join(vol, 'v-dump-20261204-213005.memory.dump');
    await md.request(path);
    expect(md.report).toMatchObject({
      fileName: 'v-dump-20261204-213005.memory.dump',
      startTimestamp: '2026-12-04T21:30:05Z',
    });
    await waitFor('dump completed', async () => (md.report?.completed ? true : undefined), 5000, 10);
    expect(md.report).toEqual({
      fileName: 'v-dump-20261204-213005.memory.dump',
      startTimestamp: '2026-12-04T21:30:05Z',
      endTimestamp: '2026-12-04T21:30:05Z',
      completed: true,
      failed: false,
    });
    expect(changes).toBe(2);
    expect(readFileSync(path).subarray(0, 4).toString('latin1')).toBe('\x7fELF');
    expect(statSync(path).size).toBe(64 * 1024 * 1024);
    expect(() => statSync(join(vol, 'v-dump-old.memory.dump'))).toThrow();
    expect(statSync(join(vol, 'keep.txt')).size).toBe(1);
    await md.request(path);
    expect(changes).toBe(2);
  });

  it("reports a driver failure as upstream's 'Domain memory dump failed'", async () => {
    driver.failNext('memoryDump');
    await md.request(join(vol, 'v-dump-2.memory.dump'));
    await waitFor('dump ended', async () => (md.report?.completed ? true : undefined), 5000, 10);
    expect(md.report).toMatchObject({
      fileName: 'v-dump-2.memory.dump',
      completed: true,
      failed: true,
      failureReason: 'Domain memory dump failed: fake driver: injected failure of memoryDump',
    });
  });

  it("dumps to the host path of the pod's hotplug dir when this process sees it elsewhere (local mode)", async () => {
    const host = join(dir, 'host-view');
    mkdirSync(join(host, 'dump'), { recursive: true });
    const mapped = new LauncherMemoryDump({
      driver: () => driver,
      ref: () => ({ namespace: 'ns', name: 'v' }),
      log: () => {},
      onChange: () => {},
      hostHotplugDir: host,
    });
    // The node agent names the file in the pod's view (upstream's directory).
    await mapped.request('/var/run/kubevirt/hotplug-disks/dump/v-dump-3.memory.dump');
    await waitFor('dump completed', async () => (mapped.report?.completed ? true : undefined), 5000, 10);
    expect(mapped.report?.failed).toBe(false);
    expect(
      readFileSync(join(host, 'dump', 'v-dump-3.memory.dump'))
        .subarray(0, 4)
        .toString('latin1'),
    ).toBe('\x7fELF');
    await expect(mapped.request(`${host}/dump/v-dump-4.memory.dump`)).rejects.toThrow('memory dump path');
  });
});
