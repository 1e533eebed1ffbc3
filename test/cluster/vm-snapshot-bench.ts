/**
 * The `BENCH snapshot` figures of test/cluster/vm-snapshot.test.ts (issue 27): the online
 * snapshot's time (created to readyToUse), the guest's freeze window, the restore's time
 * (created to complete), the clone's (vm-snapshot-clone.ts) and, in bench mode, an export
 * of the VM's disk. Bench mode (`KVTS_SNAPSHOT_BENCH=1`, set by `npm run bench:snapshot`)
 * gives the VM a 1 GiB data disk (the size; sparse, on the reflink pool) and adds
 * the export; the default (the test suite) keeps the 64 MiB claim and no export, so CI
 * pays nothing for the benchmark.
 *
 * The freeze window is read from the launcher's own log (`kubectl logs --timestamps`):
 * from its `froze N guest filesystem(s)` line (the agent's freeze returned) to its
 * `thawed N guest filesystem(s)` line (the thaw returned), the time the guest's
 * filesystems were frozen; when the log has no such pair (the thaw found the agent
 * thawed already), the test takes the VMI's `fsFreezeStatus` window seen by 100 ms polls.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { kubectlBin } from '../support/cluster-pods';

const run = promisify(execFile);

/** Bench mode: a 1 GiB disk and the export (see the file comment). */
export const SNAPSHOT_BENCH = process.env.KVTS_SNAPSHOT_BENCH === '1';
/** The data claim's size and the `disk.img` made in it. */
export const DATA_DISK = SNAPSHOT_BENCH ? { claim: '1100Mi', image: '1G' } : { claim: '64Mi', image: '16M' };
/** The test pool: room for the claim, its restore, the clone's and their snapshots (bench mode: 1.1 GiB each). */
export const POOL_BYTES = (SNAPSHOT_BENCH ? 8 : 2) * 1024 ** 3;

/** The figures gathered over the test file's run. */
export const figures: Record<string, number | undefined> = {};

/** The guest's freeze window in the launcher pod's log: `froze` to the next `thawed`, ms. */
export async function freezeWindowMs(
  kubeconfig: string,
  ns: string,
  pod: string,
): Promise<number | undefined> {
  const { stdout } = await run(
    kubectlBin,
    ['--kubeconfig', kubeconfig, 'logs', '-n', ns, pod, '-c', 'compute', '--timestamps'],
    {
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  const at = (line: string) => Date.parse(line.slice(0, line.indexOf(' ')));
  const lines = stdout.split('\n');
  const froze = lines.findLastIndex((l) => /froze \d+ guest filesystem/.test(l));
  if (froze < 0) return undefined;
  const thawed = lines.slice(froze).find((l) => /thawed \d+ guest filesystem/.test(l));
  return thawed ? at(thawed) - at(lines[froze] ?? '') : undefined;
}

/** `virtctl vmexport download --vm --port-forward --format raw` of stopped VM `vm`: MiB/s of the disk written. */
export async function exportMibPerSecond(kubeconfig: string, ns: string, vm: string): Promise<number> {
  const dir = mkdtempSync(join(tmpdir(), 'kvts-snapshot-bench-'));
  const out = join(dir, 'disk.img');
  try {
    const t0 = performance.now();
    await run(
      process.execPath,
      [
        resolve('dist/cli/virtctl.js'),
        'vmexport',
        'download',
        'bench-export',
        `--vm=${vm}`,
        `--output=${out}`,
        '--port-forward',
        '--format=raw',
        '-n',
        ns,
        '--kubeconfig',
        kubeconfig,
      ],
      { timeout: 600_000 },
    );
    const ms = performance.now() - t0;
    const size = statSync(out).size;
    console.log(`snapshot bench: export of ${size} bytes in ${ms.toFixed(0)} ms`);
    if (size === 0) throw new Error('the export download wrote nothing');
    return size / 1024 ** 2 / (ms / 1000);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The `BENCH snapshot` line of what was measured (`n/a` for a figure not taken). */
export function benchLine(): string {
  const f = (k: string, digits = 0) =>
    figures[k] === undefined ? 'n/a' : (figures[k] as number).toFixed(digits);
  return `BENCH snapshot online_snapshot_ms=${f('online_snapshot_ms')} freeze_ms=${f('freeze_ms')} restore_ms=${f('restore_ms')} clone_vm_ms=${f('clone_vm_ms')} export_mib_s=${f('export_mib_s', 1)} disk=${DATA_DISK.image}`;
}
