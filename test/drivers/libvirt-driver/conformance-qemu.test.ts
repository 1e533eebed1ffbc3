/**
 * The conformance suite against the system daemon (qemu:///system) with software
 * emulation: real QEMU processes (TCG), a minimal VMI with no disk (SeaBIOS idles), so
 * the graceful-shutdown test exercises the kill after the grace period.
 */
import { rmSync } from 'node:fs';
import { LibvirtDriver } from '../../../src/drivers/libvirt-driver';
import { runDriverConformance } from '../../../src/testing';
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
