/**
 * The `BENCH snapshot` figures of test/cluster/vm-snapshot.test.ts (issue 27): the online
 * snapshot's time (created to readyToUse), the guest's freeze window, the restore's time
 * (created to complete), the clone's (vm-snapshot-clone.ts) and, in bench mode, an export
 * of the VM's disk. Bench mode (`KVTS_SNAPSHOT_BENCH=1`, set by `npm run bench:snapshot`)
 * gives the VM a 1 GiB data disk (the size) holding data: its first 512 MiB random
 * (incompressible), the rest zeros written out (no holes); and adds the export. The
 * default (the test suite) keeps a 16 MiB sparse disk on a 64 MiB claim and no export, so
 * CI pays nothing for the benchmark.
 *
 * The freeze window is read from the launcher's own log (`kubectl logs --timestamps`):
 * from its `froze N guest filesystem(s)` line (the agent's freeze returned) to its
 * `thawed N guest filesystem(s)` line (the thaw returned), or its `unfroze:` line when the
 * agent froze nothing (the tiny guest mounts no disk filesystem: it reports 0) and so had
 * nothing to thaw: the window the VMI reports `fsFreezeStatus: frozen`. When the log has
 * no such pair, the test takes that VMI window as seen by 100 ms polls.
 *
 * The export (bench mode): the claim carries CDI's `storage.contentType: kubevirt` (as a
 * DataVolume's claim does), so the export serves `disk.img` itself; `virtctl vmexport
 * download --port-forward` fetches it with `--format raw` and with `--format gzip` (both
 * take the server's gzip link and raw gunzips it, as upstream's virtctl). Beside it, in
 * the same run, a pod on the same claim on the same node reads the same file (`cat`) and
 * compresses it (`gzip -1`, the server's level): the reference. All of it with the file in
 * the page cache (the pod reads it once first): the figures compare the pipelines, not the
 * pool's disk.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { CoreV1Api } from '@kubernetes/client-node';
import { kubectlBin } from '../support/cluster-pods';
import { waitFor } from '../support/wait';

const run = promisify(execFile);

/** Bench mode: a 1 GiB disk and the export (see the file comment). */
export const SNAPSHOT_BENCH = process.env.KVTS_SNAPSHOT_BENCH === '1';
/** The data claim's size, the `disk.img` made in it and the shell command making it (run as root in a pod on the claim, at /data). */
export const DATA_DISK = SNAPSHOT_BENCH
  ? {
      claim: '1100Mi',
      image: '1G',
      make:
        'dd if=/dev/urandom of=/data/disk.img bs=1M count=512 status=none && ' +
        'dd if=/dev/zero of=/data/disk.img bs=1M count=512 seek=512 conv=notrunc status=none',
    }
  : { claim: '64Mi', image: '16M', make: 'truncate -s 16M /data/disk.img' };
/** CDI's content type annotation: `kubevirt` says the claim holds a disk image (`disk.img`). */
export const CONTENT_TYPE_ANNOTATION = 'cdi.kubevirt.io/storage.contentType';
/** The test pool: room for the claim, its restore, the clone's and their snapshots (bench mode: 1.1 GiB each). */
export const POOL_BYTES = (SNAPSHOT_BENCH ? 8 : 2) * 1024 ** 3;

/** The figures gathered over the test file's run. */
export const figures: Record<string, number | undefined> = {};

/** The guest's freeze window in the launcher pod's log: `froze` to the next `thawed` (ms, and both lines' times). */
export async function freezeWindow(
  kubeconfig: string,
  ns: string,
  pod: string,
): Promise<{ ms: number; froze: string; thawed: string } | undefined> {
  const { stdout } = await run(
    kubectlBin,
    ['--kubeconfig', kubeconfig, 'logs', '-n', ns, pod, '-c', 'compute', '--timestamps'],
    {
      maxBuffer: 64 * 1024 * 1024,
    },
  );
  const stamp = (line: string) => line.slice(0, line.indexOf(' '));
  const lines = stdout.split('\n');
  const froze = lines.findLastIndex((l) => /froze \d+ guest filesystem/.test(l));
  if (froze < 0) return undefined;
  const thawed = lines.slice(froze).find((l) => /thawed \d+ guest filesystem|unfroze: /.test(l));
  if (!thawed) return undefined;
  const [a, b] = [stamp(lines[froze] ?? ''), stamp(thawed)];
  return { ms: Date.parse(b) - Date.parse(a), froze: a, thawed: b };
}

const MIB = 1024 ** 2;

/** A pod on `claim` (read-only, root) running `script`; resolves with its log once it Succeeded, and deletes it. */
async function runOnClaim(
  core: CoreV1Api,
  image: string,
  ns: string,
  name: string,
  claim: string,
  script: string,
): Promise<string> {
  await core.createNamespacedPod({
    namespace: ns,
    body: {
      metadata: { name },
      spec: {
        restartPolicy: 'Never',
        volumes: [{ name: 'data', persistentVolumeClaim: { claimName: claim, readOnly: true } }],
        containers: [
          {
            name: 'c',
            image,
            imagePullPolicy: 'Never',
            command: ['/bin/sh', '-c', script],
            securityContext: { runAsUser: 0 },
            volumeMounts: [{ name: 'data', mountPath: '/data', readOnly: true }],
          },
        ],
      },
    },
  });
  await waitFor(
    `pod ${name} done`,
    async () => {
      const p = await core.readNamespacedPod({ name, namespace: ns });
      if (p.status?.phase === 'Failed') throw new Error(`pod ${name} failed: ${JSON.stringify(p.status)}`);
      return p.status?.phase === 'Succeeded';
    },
    300_000,
    500,
  );
  const log = await core.readNamespacedPodLog({ name, namespace: ns });
  await core.deleteNamespacedPod({ name, namespace: ns, gracePeriodSeconds: 0 });
  await waitFor(
    `pod ${name} gone`,
    async () => !(await core.readNamespacedPod({ name, namespace: ns }).catch(() => undefined)),
    120_000,
    500,
  );
  return log;
}

/** The export figures: MiB of the disk per second. */
export interface ExportFigures {
  raw_mib_s: number;
  gzip_mib_s: number;
  /** `cat` of the same file in a pod on the claim. */
  ref_cat_mib_s: number;
  /** `gzip -1` of it there. */
  ref_gzip1_mib_s: number;
  disk_bytes: number;
  gzip_bytes: number;
}

/**
 * Exports stopped VM `vm` (its data disk `disk.img` on `claim`, see the file comment) and
 * measures the download as raw and as gzip beside the reference; the raw download's
 * sha256 must equal the file's.
 */
export async function exportFigures(
  kubeconfig: string,
  core: CoreV1Api,
  image: string,
  ns: string,
  vm: string,
  claim: string,
): Promise<ExportFigures> {
  // The reference first (the export pauses while a pod uses the claim); the untimed first
  // read puts the file in the page cache, as it is for the downloads after.
  const ref = await runOnClaim(
    core,
    image,
    ns,
    'export-reference',
    claim,
    [
      'f=/data/disk.img; cat $f > /dev/null',
      't0=$(date +%s%N); cat $f > /dev/null; t1=$(date +%s%N)',
      'gz=$(gzip -1 -c $f | wc -c); t2=$(date +%s%N)',
      'echo "size=$(stat -c %s $f) cat_ns=$((t1-t0)) gzip_ns=$((t2-t1)) gz=$gz sha=$(sha256sum $f | cut -c1-64)"',
    ].join('; '),
  );
  const field = (k: string) => /\S+/.exec(ref.split(`${k}=`)[1] ?? '')?.[0] ?? '';
  const size = Number(field('size'));
  const virtctl = (args: string[]) =>
    run(
      process.execPath,
      [resolve('dist/cli/virtctl.js'), 'vmexport', ...args, '-n', ns, '--kubeconfig', kubeconfig],
      { timeout: 600_000, maxBuffer: 16 * MIB },
    );
  const dir = mkdtempSync(join(tmpdir(), 'kvts-snapshot-bench-'));
  const timed: Record<string, { ms: number; bytes: number }> = {};
  try {
    await virtctl(['create', 'bench-export', `--vm=${vm}`]);
    // Ready first (its exporter pod started), so neither download's time holds that start.
    await waitFor(
      'the export Ready',
      async () =>
        (
          await run(kubectlBin, [
            '--kubeconfig',
            kubeconfig,
            'get',
            'virtualmachineexports.export.kubevirt.io',
            'bench-export',
            '-n',
            ns,
            '-o',
            'jsonpath={.status.phase}',
          ])
        ).stdout === 'Ready',
      180_000,
      500,
    );
    for (const format of ['raw', 'gzip']) {
      const out = join(dir, `disk.${format}`);
      const t0 = performance.now();
      await virtctl(['download', 'bench-export', `--output=${out}`, '--port-forward', `--format=${format}`]);
      timed[format] = { ms: performance.now() - t0, bytes: statSync(out).size };
      if (format === 'raw') {
        const { stdout } = await run('sha256sum', [out]);
        if (stdout.slice(0, 64) !== field('sha'))
          throw new Error(
            `the raw download's sha256 ${stdout.slice(0, 64)} is not the disk's ${field('sha')}`,
          );
      }
      rmSync(out, { force: true });
    }
    await virtctl(['delete', 'bench-export']);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  const perSecond = (ms: number) => size / MIB / (ms / 1000);
  const f: ExportFigures = {
    raw_mib_s: perSecond(timed.raw?.ms ?? Number.NaN),
    gzip_mib_s: perSecond(timed.gzip?.ms ?? Number.NaN),
    ref_cat_mib_s: perSecond(Number(field('cat_ns')) / 1e6),
    ref_gzip1_mib_s: perSecond(Number(field('gzip_ns')) / 1e6),
    disk_bytes: size,
    gzip_bytes: timed.gzip?.bytes ?? 0,
  };
  if (timed.raw?.bytes !== size)
    throw new Error(`the raw download has ${timed.raw?.bytes} bytes, the disk ${size}`);
  console.log(`snapshot bench: export ${JSON.stringify(timed)}, reference pod: ${ref.trim()}`);
  return f;
}

/** The `BENCH snapshot` line of what was measured (`n/a` for a figure not taken). */
export function benchLine(): string {
  const f = (k: string, digits = 0) =>
    figures[k] === undefined ? 'n/a' : (figures[k] as number).toFixed(digits);
  return `BENCH snapshot online_snapshot_ms=${f('online_snapshot_ms')} freeze_ms=${f('freeze_ms')} restore_ms=${f('restore_ms')} clone_vm_ms=${f('clone_vm_ms')} export_mib_s=${f('export_mib_s', 1)} export_gzip_mib_s=${f('export_gzip_mib_s', 1)} disk=${DATA_DISK.image}`;
}

/** The export's reference line (bench mode): the same file read and gzip'd in a pod on the claim. */
export function exportReferenceLine(x: ExportFigures): string {
  return `BENCH snapshot-export-reference cat_mib_s=${x.ref_cat_mib_s.toFixed(1)} gzip1_mib_s=${x.ref_gzip1_mib_s.toFixed(1)} disk_bytes=${x.disk_bytes} gzip_bytes=${x.gzip_bytes}`;
}
