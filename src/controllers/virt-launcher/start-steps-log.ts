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

/**
 * Starts probing the host's capabilities right away, while the node agent has yet to send
 * the first sync (it waits for the kubelet to report this container running): libvirt runs
 * QEMU to learn them before it defines a domain, a second or more under TCG, which the
 * sync would otherwise wait for. libvirt caches the answer, so the sync's own probe then
 * returns at once. A failure is only logged: the sync's probe reports it again.
 */
export function probeAhead(driver: HypervisorDriver, log: (m: string) => void): void {
  void timedStep(log, 'hypervisor capabilities probed', () => driver.probe()).catch((e) =>
    log(`probing the hypervisor's capabilities: ${(e as Error).message}`),
  );
}
