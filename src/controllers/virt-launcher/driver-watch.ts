/**
 * The launcher's watch on its driver: follows the driver's domain events for its one
 * domain and, when the connection ends (the launcher's libvirt daemon restarted), builds
 * a new driver (backing off from 100 ms to 2 s) and follows that one, until the launcher
 * exits.
 */
import type { DomainEvent, HypervisorDriver } from '../../drivers/driver';

/** What {@link watchDriver} is given by the launcher. */
export interface DriverWatch {
  /** The launcher's domain: other domains' events are skipped. */
  domainName: string;
  /** Builds a new driver (the launcher's `connectDriver`). */
  connect: () => Promise<HypervisorDriver>;
  /** True once the launcher is exiting: stop watching and reconnecting. */
  exiting: () => boolean;
  /** One event of the launcher's domain. */
  onEvent: (ev: DomainEvent) => void;
  /** A new driver replaces the lost one (the launcher swaps it in and closes the old). */
  onReconnect: (next: HypervisorDriver) => Promise<void>;
  log: (m: string) => void;
}

/** Follows `driver`'s events, then reconnects and follows the next driver's, until exiting. */
export async function watchDriver(driver: HypervisorDriver, w: DriverWatch): Promise<void> {
  try {
    for await (const ev of driver.events()) {
      if (ev.domain === w.domainName) w.onEvent(ev);
    }
  } catch (e) {
    w.log(`events: ${(e as Error).message}`);
  }
  if (w.exiting()) return;
  for (let delay = 100; !w.exiting(); delay = Math.min(delay * 2, 2000)) {
    try {
      const next = await w.connect();
      await w.onReconnect(next);
      w.log('reconnected to the hypervisor');
      void watchDriver(next, w);
      return;
    } catch (e) {
      w.log(`reconnect: ${(e as Error).message}`);
      await new Promise((r) => setTimeout(r, delay));
    }
  }
}
