/** The example driver proves itself with the public conformance suite, like any driver. */
import { convertVMI, defaultConverterContext } from 'kubevirt-ts/converter';
import { DriverRegistry } from 'kubevirt-ts/drivers';
import { FakeDriver, FakeHost, minimalVmi, runDriverConformance } from 'kubevirt-ts/testing';
import { describe, expect, it } from 'vitest';
import { AuditDriver, auditDriverFactory, WATCHDOG_LABEL, watchdogPlugin } from './audit-driver';

const host = new FakeHost();
runDriverConformance(
  'example AuditDriver over the fake driver',
  () => new AuditDriver(new FakeDriver({ host })),
  {
    syncOptions: { useEmulation: true },
  },
);

describe('example third-party driver and plugin', () => {
  it('records state-changing calls with their outcome', async () => {
    const d = new AuditDriver(new FakeDriver({ host: new FakeHost({ kvmUsable: true }) }));
    const ref = { namespace: 'ns', name: 'vm' };
    await d.sync(minimalVmi(ref));
    await d.pause(ref);
    await expect(d.pause({ namespace: 'ns', name: 'ghost' })).rejects.toThrow('no domain ns_ghost');
    expect(d.records.map((r) => [r.op, r.target, r.outcome])).toEqual([
      ['sync', 'ns/vm', 'ok'],
      ['pause', 'ns/vm', 'ok'],
      ['pause', 'ns/ghost', 'error'],
    ]);
  });

  it('is selected through the registry and its plugin adds a watchdog to labelled VMIs only', async () => {
    const registry = new DriverRegistry([auditDriverFactory(() => new FakeDriver())], [watchdogPlugin], {
      driver: 'audit',
    });
    const driver = await registry.create();
    expect(driver.name).toBe('audit');
    const labelled = minimalVmi({ namespace: 'ns', name: 'wd' });
    labelled.metadata = { ...labelled.metadata, labels: { [WATCHDOG_LABEL]: 'true' } };
    const plain = minimalVmi({ namespace: 'ns', name: 'plain' });
    for (const [vmi, expected] of [
      [labelled, [{ model: 'i6300esb', action: 'reset' }]],
      [plain, undefined],
    ] as const) {
      const domain = convertVMI(vmi, defaultConverterContext());
      for (const p of registry.pluginsFor(vmi)) {
        p.mutateDomain?.(domain, vmi, {
          capabilities: await driver.probe(),
          options: {},
          driver: driver.name,
        });
      }
      expect(domain.devices.watchdog).toEqual(expected);
    }
  });
});
