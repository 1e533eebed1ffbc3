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
});
