/**
 * The conformance suite against the system daemon (qemu:///system) with software
 * emulation: real QEMU processes (TCG), a minimal VMI with no disk (SeaBIOS idles), so
 * the graceful-shutdown test exercises the kill after the grace period.
 */
import { rmSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { LibvirtDriver } from '../../../src/drivers/libvirt-driver';
import { minimalVmi, runDriverConformance } from '../../../src/testing';
import { integration } from '../../support/integration';
import { daemonAvailable, daemonMissing, scratchPaths } from './support';

const run = integration('libvirt qemu:///system conformance', daemonAvailable, daemonMissing);
const scratch = scratchPaths('kvts-test-drv-qemu-');

runDriverConformance(
  'libvirt on qemu:///system with emulation',
  () =>
    LibvirtDriver.connect({
      name: 'emulation',
      uri: 'qemu:///system',
      allowKvm: false,
      converterContext: { paths: scratch.paths },
    }),
  {
    namePrefix: 'kvts-test-drv-',
    syncOptions: { useEmulation: true },
    shutdownGraceSeconds: 1,
    skip: run ? undefined : daemonMissing,
    teardown: async () => rmSync(scratch.dir, { recursive: true, force: true }),
  },
);

describe.skipIf(!run)('libvirt driver on qemu:///system specifics', () => {
  it('starts a domain paused when asked (for SEV attestation), then resumes it', async () => {
    const driver = await LibvirtDriver.connect({
      uri: 'qemu:///system',
      allowKvm: false,
      converterContext: { paths: scratch.paths },
    });
    const ref = { namespace: 'kvts-drivers', name: `kvts-test-drv-paused-${process.pid}` };
    try {
      const info = await driver.sync(minimalVmi(ref), { useEmulation: true, paused: true });
      expect(info.state).toBe('paused');
      expect(info.reason).toBe('user');
      await driver.unpause(ref);
      expect((await driver.getDomain(ref))?.state).toBe('running');
      expect(driver.memoryOverhead(minimalVmi(ref))).toBe(128 * 1024 * 1024);
    } finally {
      await driver.delete(ref);
      await driver.close();
    }
  });

  it('migration: the target renders the domain XML; the source attempts a live peer-to-peer migration', async () => {
    const driver = await LibvirtDriver.connect({
      uri: 'qemu:///system',
      allowKvm: false,
      converterContext: { paths: scratch.paths },
    });
    const ref = { namespace: 'kvts-drivers', name: `kvts-test-drv-migrate-${process.pid}` };
    const vmi = minimalVmi(ref);
    try {
      const cookie = await driver.migration.prepareTarget(vmi, { useEmulation: true });
      expect(cookie).toContain(`<name>${ref.namespace}_${ref.name}</name>`);
      await expect(driver.migration.migrateSource(ref, 'not a uri', cookie)).rejects.toMatchObject({
        code: 'Invalid',
        message: expect.stringContaining('is not a libvirt URI'),
      });
      await expect(driver.migration.migrateSource(ref, 'qemu+unix:///system', cookie)).rejects.toMatchObject({
        code: 'NotFound',
      });
      const info = await driver.sync(vmi, { useEmulation: true });
      // One host, one daemon: libvirt takes the call and fails it (it cannot open a
      // peer-to-peer connection back to itself); the source guest must be untouched.
      const err = await driver.migration.migrateSource(ref, 'qemu:///system', cookie).then(
        () => undefined,
        (e: unknown) => e as { code?: string; message?: string },
      );
      expect(['Hypervisor', 'Unsupported']).toContain(err?.code);
      expect(err?.message).toMatch(
        new RegExp(`^domain ${ref.namespace}_${ref.name}: migrate to qemu:///system failed: .+`),
      );
      const after = await driver.getDomain(ref);
      expect(after?.state).toBe('running');
      expect(after?.bootId).toBe(info.bootId);
    } finally {
      await driver.migration.abortTarget(ref);
      await driver.close();
    }
  });
});
