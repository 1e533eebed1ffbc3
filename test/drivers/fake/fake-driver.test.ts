import { describe, expect, it } from 'vitest';
import { DriverError } from '../../../src/drivers/errors';
import { FakeDriver, FakeHost } from '../../../src/drivers/fake';
import { minimalVmi, runDriverConformance } from '../../../src/testing';

const host = new FakeHost();
runDriverConformance('fake', () => new FakeDriver({ host }), { syncOptions: { useEmulation: true } });

const guestIgnoring = new FakeHost();
runDriverConformance(
  'fake, guest ignoring ACPI shutdown',
  () => new FakeDriver({ host: guestIgnoring, guestHonoursShutdown: false }),
  { syncOptions: { useEmulation: true }, shutdownGraceSeconds: 0 },
);

describe('FakeDriver specifics', () => {
  const ref = { namespace: 'ns', name: 'vm1' };

  it('refuses to run without KVM unless emulation is allowed, naming the setting', async () => {
    const d = new FakeDriver();
    await expect(d.sync(minimalVmi(ref))).rejects.toThrow(/developerConfiguration\.useEmulation/);
    const withKvm = new FakeDriver({ host: new FakeHost({ kvmUsable: true }) });
    expect((await withKvm.sync(minimalVmi(ref))).state).toBe('running');
  });

  it('injects failures for the next calls only', async () => {
    const d = new FakeDriver({ host: new FakeHost({ kvmUsable: true }) });
    d.failNext('sync', undefined, 2);
    const vmi = minimalVmi(ref);
    await expect(d.sync(vmi)).rejects.toMatchObject({ code: 'Injected' });
    await expect(d.sync(vmi)).rejects.toBeInstanceOf(DriverError);
    expect((await d.sync(vmi)).state).toBe('running');
  });

  it('injects a caller-supplied error', async () => {
    const d = new FakeDriver();
    d.failNext('probe', new Error('disk on fire'));
    await expect(d.probe()).rejects.toThrow('disk on fire');
    expect((await d.probe()).arch).toBe('x86_64');
  });

  it('delays operations by the configured latency', async () => {
    const d = new FakeDriver({ latencyMs: 20 });
    let settled = false;
    const p = d.probe().then(() => {
      settled = true;
    });
    await new Promise((r) => setTimeout(r, 1));
    expect(settled).toBe(false);
    await p;
    expect(settled).toBe(true);
  });

  it('is deterministic: uuids and boot ids follow a sequence', async () => {
    const vmi = minimalVmi(ref);
    delete vmi.metadata?.uid;
    const d = new FakeDriver({ host: new FakeHost({ kvmUsable: true }) });
    const info = await d.sync(vmi);
    expect(info.uuid).toBe('00000000-0000-4000-8000-000000000001');
    expect(info.bootId).toBe('00000000-0000-4000-8000-000000000001/1');
    expect(info.memoryKiB).toBe(65536);
    expect(info.vcpus).toBe(1);
  });

  it('rejects a bad memory quantity naming it', async () => {
    const vmi = minimalVmi(ref);
    (vmi.spec as { domain: { memory: { guest: string } } }).domain.memory.guest = '12 bananas';
    const d = new FakeDriver({ host: new FakeHost({ kvmUsable: true }) });
    await expect(d.sync(vmi)).rejects.toThrow(/"12 bananas"/);
  });

  it('fails operations after close', async () => {
    const d = new FakeDriver();
    await d.close();
    await expect(d.probe()).rejects.toMatchObject({ code: 'InvalidState' });
  });
});
