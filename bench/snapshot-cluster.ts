/**
 * `npm run bench:snapshot` (root; the npm script takes /tmp/kvts-cluster.lock, the
 * machine's one-kubelet lock, as `bench:operator-cluster` does): runs the VM snapshot
 * cluster test (test/cluster/vm-snapshot.test.ts: the tiny guest, an online snapshot with
 * its agent's freeze, a restore, a clone) in bench mode (`KVTS_SNAPSHOT_BENCH=1`: a 1 GiB
 * data disk holding data on the reflink pool, and an export of the stopped VM's disk with
 * `virtctl vmexport download --port-forward`, raw and gzip, beside a pod reading and
 * compressing the same file: test/cluster/vm-snapshot-bench.ts), on the real one-node
 * cluster the test brings up and down. Needs dist/ and the images of this tree (`npm run
 * build && scripts/cluster/setup.sh`). The snapshot's reference, measured in the same run
 * on a pool like the test's: `cp --reflink=always` of a 1 GiB file (what the CSI snapshot
 * itself costs) and a full `cp` of it (what a copying snapshot would).
 *
 * Ends with the test's lines `BENCH snapshot online_snapshot_ms= freeze_ms= restore_ms=
 * clone_vm_ms= export_mib_s= export_gzip_mib_s= disk=1G` and `BENCH
 * snapshot-export-reference cat_mib_s= gzip1_mib_s= ...`, then `BENCH snapshot-reference
 * reflink_1g_ms= copy_1g_ms= load1=` (the 1-minute load average at the end).
 */
import { execFileSync, spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { makeTestPool } from '../test/controllers/csi-driver/pool-fixture';

const child = spawn('npx', ['vitest', 'run', '--no-file-parallelism', 'test/cluster/vm-snapshot.test.ts'], {
  env: { ...process.env, KVTS_SNAPSHOT_BENCH: '1', KUBEVIRT_TS_REQUIRE_INTEGRATION: '1', VITEST_SERIAL: '' },
  stdio: ['ignore', 'pipe', 'inherit'],
});
let out = '';
child.stdout.on('data', (d: Buffer) => {
  out += d.toString();
  process.stderr.write(d);
});
const code = await new Promise<number | null>((r) => child.on('exit', r));
// Vitest's reporter colours the line's start: the lines are found inside the output.
const line = /BENCH snapshot [\w=./ -]*/.exec(out)?.[0]?.trim();
const exportLine = /BENCH snapshot-export-reference [\w=./ -]*/.exec(out)?.[0]?.trim();
if (code !== 0 || !line || !exportLine)
  throw new Error(`bench:snapshot: the test run failed (exit ${code}) or printed no BENCH line`);

// The reference: a reflink copy and a full copy of a 1 GiB file (64 MiB written, the rest
// sparse) on a pool like the test's.
const pool = await makeTestPool(4 * 1024 ** 3);
let reflinkMs = 0;
let copyMs = 0;
try {
  const src = join(pool.dir, 'ref.img');
  execFileSync('dd', ['if=/dev/urandom', `of=${src}`, 'bs=1M', 'count=64', 'status=none']);
  execFileSync('truncate', ['-s', '1G', src]);
  execFileSync('sync');
  const timed = (args: string[]) => {
    const t = performance.now();
    execFileSync('cp', args);
    return performance.now() - t;
  };
  reflinkMs = timed(['--reflink=always', src, join(pool.dir, 'ref-reflink.img')]);
  copyMs = timed(['--reflink=never', '--sparse=never', src, join(pool.dir, 'ref-copy.img')]);
} finally {
  await pool.cleanup();
}
console.log(line);
console.log(exportLine);
console.log(
  `BENCH snapshot-reference reflink_1g_ms=${reflinkMs.toFixed(1)} copy_1g_ms=${copyMs.toFixed(0)} load1=${loadavg()[0]?.toFixed(2)}`,
);
