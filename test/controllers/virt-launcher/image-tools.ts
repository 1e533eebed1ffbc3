/** Gating of the launcher's volume-preparation tests on the real image tools they run. */
import { spawnSync } from 'node:child_process';
import { integration } from '../../support/integration';

/** Whether `bin` is on the PATH. */
function onPath(bin: string): boolean {
  return spawnSync('which', [bin], { stdio: 'ignore' }).status === 0;
}

/** True when qemu-img and xorriso are installed (the integration rules apply when they are not). */
export function imageToolsRun(): boolean {
  return integration(
    'qemu-img and xorriso',
    onPath('qemu-img') && onPath('xorriso'),
    'install qemu-utils and xorriso',
  );
}
