/**
 * On a kubelet node a containerDisk's disk is copied by the launcher pod's `volume<name>`
 * container, which runs beside the launcher (virt-controller container-disk-containers.ts):
 * the launcher waits for its outcome, the backing file renamed into place or
 * `<backing>.error` holding the reason. The wait is bounded below the handler's launcher
 * call deadline (30 s); a copy still running then fails this sync with a message saying
 * so, and the handler's next sync waits again.
 */
import { lstat, readFile } from 'node:fs/promises';

const POLL_MS = 50;

/** Resolves once `backing` is a regular file; throws the copier's error, or on timeout. */
export async function waitForContainerDiskCopy(backing: string, container: string, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const st = await lstat(backing).catch(() => undefined);
    if (st?.isFile()) return;
    if (st)
      throw new Error(
        `backing file ${backing} is not a regular file (the pod's ${container} container copies it)`,
      );
    const error = await readFile(`${backing}.error`, 'utf8').catch(() => undefined);
    if (error !== undefined)
      throw new Error(`the pod's ${container} container could not copy the disk: ${error.trim()}`);
    if (Date.now() >= deadline)
      throw new Error(`the pod's ${container} container has not finished copying the disk to ${backing} yet`);
    await new Promise((r) => setTimeout(r, POLL_MS));
  }
}
