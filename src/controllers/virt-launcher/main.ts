/**
 * The launcher process's life: start, stop gracefully on SIGTERM/SIGINT (ACPI shutdown,
 * kill after the grace period), resolve with the exit code once the domain is gone.
 */
import type { VirtLauncher } from './launcher';

/** Runs `launcher` until it exits; returns the exit code. */
export async function runVirtLauncher(launcher: VirtLauncher): Promise<number> {
  const onSignal = () => void launcher.stop();
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  try {
    await launcher.start();
    return await launcher.exited;
  } finally {
    process.off('SIGTERM', onSignal);
    process.off('SIGINT', onSignal);
  }
}
