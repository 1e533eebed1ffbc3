/**
 * The libvirt driver's migration and SEV calls through the real daemon, on libvirt's
 * test driver (test:///default, no QEMU): options are checked before anything is sent;
 * a full MigratePerform3Params call (destination_xml and persistent_xml from the live
 * XML with the target's paths, bandwidth, migrate_uri, flags) is decoded by the daemon
 * and refused by the test driver, which cannot migrate; job statistics and SEV are
 * refused as Unsupported (the test driver has neither).
 */
import { rmSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DriverError } from '../../../src/drivers';
import { LibvirtDriver } from '../../../src/drivers/libvirt-driver';
import { minimalVmi } from '../../../src/testing';
import { integration } from '../../support/integration';
import { daemonAvailable, daemonMissing, scratchPaths } from './support';

const run = integration('libvirt test:///default migration calls', daemonAvailable, daemonMissing);

describe.skipIf(!run)('libvirt driver migration and SEV calls on test:///default', () => {
  const scratch = scratchPaths('kvts-test-drv-mig-');
  const ref = { namespace: 'kvts-drivers', name: `kvts-test-drv-mig-${process.pid}` };
  const dom = `${ref.namespace}_${ref.name}`;
  let driver: LibvirtDriver;

  beforeAll(async () => {
    driver = await LibvirtDriver.connect({
      uri: 'test:///default',
      converterContext: { paths: scratch.paths },
    });
    await driver.sync(minimalVmi(ref), { useEmulation: true });
  });

  afterAll(async () => {
    await driver?.delete(ref);
    await driver?.close();
    rmSync(scratch.dir, { recursive: true, force: true });
  });

  it('refuses bad options before calling libvirt', async () => {
    const m = driver.migration;
    await expect(m.migrateSource(ref, 'not a uri', '')).rejects.toThrow(
      `migration of ${dom}: target URI "not a uri" is not a libvirt URI (e.g. qemu+tcp://node2/system)`,
    );
    await expect(m.migrateSource(ref, 'qemu+tcp://n2/system', '', { bandwidthMiBps: -1 })).rejects.toThrow(
      `migration of ${dom}: bandwidth -1 MiB/s must be a non-negative integer`,
    );
    await expect(
      m.migrateSource(ref, 'qemu+tcp://n2/system', '', { migrateUri: 'http://x' }),
    ).rejects.toMatchObject({
      code: 'Invalid',
      message: `migration of ${dom}: migrate URI "http://x" is not a tcp://, unix:// or rdma:// URI`,
    });
    await expect(m.migrateSource(ref, 'qemu+tcp://n2/system', '{"not":"xml"}')).rejects.toMatchObject({
      code: 'Invalid',
      message: `migration of ${dom}: the target's prepared domain XML is unusable: not a <domain> document`,
    });
  });

  it('refuses a disks URI that is not tcp:// or unix://', async () => {
    await expect(
      driver.migration.migrateSource(ref, 'qemu+tcp://n2/system', '', {
        blockMigration: { shared: [], generated: [] },
        disksUri: 'nbd:host:1',
      }),
    ).rejects.toThrow(`migration of ${dom}: disks URI "nbd:host:1" is not a tcp:// or unix:// URI`);
  });

  it('refuses a parallel connection count below one', async () => {
    await expect(
      driver.migration.migrateSource(ref, 'qemu+tcp://n2/system', '', { parallelConnections: 0 }),
    ).rejects.toThrow(`migration of ${dom}: parallel connections 0 must be a positive integer`);
  });

  it('sends a full peer-to-peer migration call the daemon decodes; the test driver cannot migrate', async () => {
    const prepared = await driver.migration.prepareTarget(minimalVmi(ref), { useEmulation: true });
    expect(prepared).toContain(`<name>${dom}</name>`);
    const err = await driver.migration
      .migrateSource(ref, 'qemu+tcp://127.0.0.1:1/system', prepared, {
        bandwidthMiBps: 64,
        allowAutoConverge: true,
        allowPostCopy: true,
        unsafe: true,
        migrateUri: 'tcp://127.0.0.1',
        parallelConnections: 2,
        // A block migration of a domain without file disks: nothing to copy, no extra parameters.
        blockMigration: { shared: [], generated: [] },
        disksUri: 'unix:///tmp/kvts-no-such-49153.sock',
      })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(DriverError);
    expect((err as DriverError).code).toBe('Unsupported');
    expect((err as DriverError).message).toMatch(
      new RegExp(`^domain ${dom}: migrate to qemu\\+tcp://127\\.0\\.0\\.1:1/system failed: .*not supported`),
    );
    expect(await driver.getDomain(ref)).toMatchObject({ state: 'running' });
  });

  it("job progress goes through virDomainGetJobStats, which the test driver lacks (QEMU's: the e2e test)", async () => {
    await expect(driver.migration.progress(ref)).rejects.toMatchObject({
      code: 'Unsupported',
      message: `domain ${dom}: read migration job failed: this function is not supported by the connection driver: virDomainGetJobStats`,
    });
  });

  it('the test driver has no SEV: platform info is Unsupported', async () => {
    await expect(driver.sev.platformInfo()).rejects.toMatchObject({ code: 'Unsupported' });
  });
});
