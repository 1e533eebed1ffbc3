/**
 * The fake driver's live migration and SEV capabilities at the driver level: libvirt's
 * refusals (same host, nothing to abort, a running domain of that name on the target),
 * a watched and cancelled job, the host registry's URI check, and `sev` present only on
 * a host that reports SEV.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../src/api';
import { FakeDriver, FakeHost, registerFakeHost } from '../../../src/drivers';

const vmi: VirtualMachineInstance = {
  metadata: { name: 'vm1', namespace: 'ns1', uid: 'u1' },
  spec: { domain: { devices: {}, resources: { requests: { memory: '64Mi' } } } },
};
const ref = { namespace: 'ns1', name: 'vm1' };

describe('FakeDriver migration', () => {
  const cleanups: Array<() => void> = [];
  afterEach(() => {
    for (const c of cleanups.splice(0)) c();
  });

  it('refuses the same host, a bad URI, and an abort with no job', async () => {
    const host = new FakeHost();
    cleanups.push(registerFakeHost('fake://self', host));
    const d = new FakeDriver({ host });
    await d.sync(vmi, { useEmulation: true });
    await expect(d.migration.migrateSource(ref, 'fake://self', '')).rejects.toThrow(
      'domain ns1_vm1: migrate to fake://self failed: internal error: Attempt to migrate guest to the same host',
    );
    await expect(d.migration.cancel(ref)).rejects.toMatchObject({
      code: 'InvalidState',
      message: 'domain ns1_vm1: no migration job is running',
    });
    expect(() => registerFakeHost('http://x', host)).toThrow(
      'fake host URI "http://x": must look like fake://<name>',
    );
  });

  it('a running job reports progress and can be cancelled; the guest stays', async () => {
    const a = new FakeHost();
    const b = new FakeHost();
    cleanups.push(registerFakeHost('fake://b', b));
    const src = new FakeDriver({ host: a, migration: { durationMs: 600_000 } });
    const dst = new FakeDriver({ host: b });
    await src.sync(vmi, { useEmulation: true });
    await dst.migration.prepareTarget(vmi, {});
    const moving = src.migration.migrateSource(ref, 'fake://b', '').catch((e: Error) => e);
    const p = await src.migration.progress(ref);
    expect(p).toMatchObject({ dataTotal: 64 * 1024 * 1024 });
    expect(p?.dataRemaining).toBe(64 * 1024 * 1024 - (p?.dataProcessed ?? 0));
    await src.migration.cancel(ref);
    expect(((await moving) as Error).message).toBe(
      'domain ns1_vm1: migrate to fake://b failed: operation aborted: migration out: canceled by client',
    );
    expect(await src.migration.progress(ref)).toBeUndefined();
    expect(a.domains.get('ns1_vm1')?.info.state).toBe('running');
    expect(b.domains.has('ns1_vm1')).toBe(false);
  });

  it('a target with the domain running refuses to prepare', async () => {
    const d = new FakeDriver();
    await d.sync(vmi, { useEmulation: true });
    await expect(d.migration.prepareTarget(vmi, {})).rejects.toMatchObject({ code: 'InvalidState' });
  });
});

describe('FakeDriver SEV', () => {
  it('has the capability only on a host that reports SEV', async () => {
    expect(new FakeDriver().sev).toBeUndefined();
    const host = new FakeHost({
      sev: {
        sev: true,
        sevEs: false,
        sevSnp: false,
        cbitpos: 47,
        reducedPhysBits: 1,
        maxGuests: 15,
        maxEsGuests: 0,
      },
    });
    const d = new FakeDriver({ host });
    expect(await d.sev?.platformInfo()).toMatchObject({ cbitpos: 47, reducedPhysBits: 1, maxGuests: 15 });
  });
});
