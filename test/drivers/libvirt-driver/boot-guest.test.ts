/**
 * The real boot: a VMI (direct kernel boot of the tiny test guest) converted and run
 * by the libvirt driver under software emulation on qemu:///system. The test reads the
 * boot marker from the serial console socket the driver reports, then shuts the guest
 * down gracefully and waits for the driver's stop event.
 */
import { realpathSync } from 'node:fs';
import { expect, it } from 'vitest';
import { LibvirtDriver } from '../../../src/drivers/libvirt-driver';
import { recordEvents } from '../../../src/testing';
import * as guest from '../../support/guest';
import { realGuestSuite, tinyGuestVmi } from './support';

const { run, scratch, leftovers } = realGuestSuite(
  'real guest boot through the libvirt driver',
  'kvts-test-drv-boot-',
);

it.skipIf(!run)(
  'boots the tiny guest, reads the boot marker on the serial socket, and reports the stop after shutdown',
  { timeout: 240_000 },
  async () => {
    const vmi = tinyGuestVmi(`kvts-test-drv-boot-${process.pid}`);
    const ref = { namespace: 'kvts-drivers', name: vmi.metadata?.name as string };
    const driver = await LibvirtDriver.connect({
      uri: 'qemu:///system',
      name: 'emulation',
      allowKvm: false,
      converterContext: { paths: { ...scratch.paths, kernelBootDir: realpathSync(guest.guestDir) } },
    });
    const events = recordEvents(driver);
    leftovers.push(async () => {
      await driver.delete(ref);
      await driver.close();
    });
    try {
      const info = await driver.sync(vmi, { useEmulation: true });
      expect(info.state).toBe('running');
      const endpoint = await driver.consoleEndpoint(ref);
      expect(endpoint).toEqual({
        kind: 'unix',
        path: `${scratch.paths.privateDir}/${vmi.metadata?.uid}/virt-serial0`,
      });
      const serial = await guest.SerialConsole.connect(endpoint.path as string);
      try {
        await serial.waitFor(guest.BOOT_MARKER, 120_000);
        await driver.shutdown(ref, { graceSeconds: 60 });
        const stopped = await events.waitFor(
          (e) => e.domain === info.name && e.type === 'stopped',
          60_000,
          'stopped',
        );
        // The guest powered itself off on the ACPI button: not killed after the grace period.
        expect(stopped).toEqual({ type: 'stopped', domain: info.name, reason: 'shutdown' });
        expect(serial.output).toContain(guest.POWEROFF_MARKER);
        expect((await driver.getDomain(ref))?.state).toBe('shutoff');
      } finally {
        serial.close();
      }
    } finally {
      events.stop();
      await driver.delete(ref);
      await driver.close();
    }
  },
);
