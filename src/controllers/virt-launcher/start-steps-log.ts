/**
 * The launcher's start-up steps in its log, each with how long it took, as upstream's
 * launcher logs its own ("Connected to libvirt daemon", "Domain defined.", "Domain
 * started."): where a slow VM start spends its time, from the launcher's side.
 */
import type { HypervisorDriver } from '../../drivers/driver';

/** Runs `fn`, then logs `what` with the time it took (a failure is logged by its caller). */
export async function timedStep<T>(log: (m: string) => void, what: string, fn: () => Promise<T>): Promise<T> {
  const t0 = performance.now();
  const value = await fn();
  log(`${what} (${Math.round(performance.now() - t0)} ms)`);
  return value;
}

/** `driver` with its `sync` (define and start the domain) logged with its time and outcome. */
export function withLoggedSync(driver: HypervisorDriver, log: (m: string) => void): HypervisorDriver {
  const sync = driver.sync.bind(driver);
  driver.sync = async (vmi, options) => {
    const t0 = performance.now();
    const info = await sync(vmi, options);
    log(`domain synced: ${info.state} (${Math.round(performance.now() - t0)} ms)`);
    return info;
  };
  return driver;
}
