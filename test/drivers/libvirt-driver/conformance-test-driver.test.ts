/** The conformance suite against libvirt's test driver (test:///default) through the real daemon. */
import { rmSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { LibvirtDriver } from '../../../src/drivers/libvirt-driver';
import { minimalVmi, runDriverConformance } from '../../../src/testing';
import { integration } from '../../support/integration';
import { daemonAvailable, daemonMissing, scratchPaths } from './support';

const run = integration('libvirt test:///default conformance', daemonAvailable, daemonMissing);
const scratch = scratchPaths('kvts-test-drv-testdrv-');

runDriverConformance(
  'libvirt on test:///default',
  () => LibvirtDriver.connect({ uri: 'test:///default', converterContext: { paths: scratch.paths } }),
  {
    namePrefix: 'kvts-test-drv-',
    syncOptions: { useEmulation: true },
    skip: run ? undefined : daemonMissing,
    teardown: async () => rmSync(scratch.dir, { recursive: true, force: true }),
  },
);

describe.skipIf(!run)('libvirt driver specifics on test:///default', () => {
  it('reports the serial console and VNC sockets the converter placed in the VMI private dir', async () => {
    const driver = await LibvirtDriver.connect({
      uri: 'test:///default',
      converterContext: { paths: scratch.paths },
    });
    const ref = { namespace: 'kvts-drivers', name: `kvts-test-drv-endpoints-${process.pid}` };
    const vmi = minimalVmi(ref);
    try {
      await driver.sync(vmi, { useEmulation: true });
      const dir = `${scratch.paths.privateDir}/${vmi.metadata?.uid}`;
      expect(await driver.consoleEndpoint(ref)).toEqual({ kind: 'unix', path: `${dir}/virt-serial0` });
      expect(await driver.vncEndpoint(ref)).toEqual({ kind: 'unix', path: `${dir}/virt-vnc` });
      expect(driver.memoryOverhead(vmi)).toBe(0);
    } finally {
      await driver.delete(ref);
      await driver.close();
    }
  });

  it('says clearly that the test driver cannot start paused (qemu:///system can: conformance-qemu)', async () => {
    const driver = await LibvirtDriver.connect({
      uri: 'test:///default',
      converterContext: { paths: scratch.paths },
    });
    const ref = { namespace: 'kvts-drivers', name: `kvts-test-drv-paused-${process.pid}` };
    try {
      await expect(driver.sync(minimalVmi(ref), { useEmulation: true, paused: true })).rejects.toMatchObject({
        code: 'Unsupported',
        message: expect.stringContaining(
          `domain ${ref.namespace}_${ref.name}: define and start failed: unsupported flags`,
        ),
      });
    } finally {
      await driver.delete(ref);
      await driver.close();
    }
  });

  it('refuses a VMI the converter rejects, as Invalid with the field path', async () => {
    const driver = await LibvirtDriver.connect({
      uri: 'test:///default',
      converterContext: { paths: scratch.paths },
    });
    const ref = { namespace: 'kvts-drivers', name: `kvts-test-drv-bad-${process.pid}` };
    const vmi = minimalVmi(ref);
    (vmi.spec as { domain: { machine?: { type: string } } }).domain.machine = { type: 'q35 --evil' };
    try {
      await expect(driver.sync(vmi, { useEmulation: true })).rejects.toMatchObject({
        code: 'Invalid',
        message: expect.stringContaining('spec.domain.machine.type'),
      });
      expect(await driver.getDomain(ref)).toBeUndefined();
    } finally {
      await driver.close();
    }
  });
});
