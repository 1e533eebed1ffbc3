/** The conformance suite against libvirt's test driver (test:///default) through the real daemon. */
import { rmSync } from 'node:fs';
import { LibvirtDriver } from '../../../src/drivers/libvirt-driver';
import { runDriverConformance } from '../../../src/testing';
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
