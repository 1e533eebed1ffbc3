/**
 * The Kubernetes CSI sidecars (scripts/csi/build-sidecars.sh) as host processes beside a
 * driver in the test process, for the cluster tests: csi-provisioner and csi-snapshotter
 * talk to the driver's socket, snapshot-controller to the API server only; all three reach
 * the API server with the cluster's admin kubeconfig. Their logs go to files the test
 * prints when something does not show up.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync, openSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseAllDocuments } from 'yaml';
import { SNAPSHOT_CONTROLLER_FLAGS } from '../../src/controllers/virt-operator/components/storage';
import { cacheDir } from '../support/integration';

/** Where build-sidecars.sh puts the current build. */
export const SIDECARS_DIR = join(cacheDir, 'csi-sidecars', 'current');
const BINARIES = ['csi-provisioner', 'csi-snapshotter', 'snapshot-controller'] as const;
/** The sidecars' log verbosity: `KVTS_CSI_SIDECARS_V` (e.g. 5, to follow one snapshot's steps), else 3. */
const V = `--v=${/^\d$/.test(process.env.KVTS_CSI_SIDECARS_V ?? '') ? process.env.KVTS_CSI_SIDECARS_V : '3'}`;

/** Why the sidecars cannot run here, or undefined when all are built. */
export function sidecarsUnavailableReason(): string | undefined {
  const missing = BINARIES.filter((b) => !existsSync(join(SIDECARS_DIR, 'bin', b)));
  if (missing.length) return `${missing.join(', ')} not built: run scripts/csi/build-sidecars.sh`;
  if (!existsSync(join(SIDECARS_DIR, 'crd', '.done')))
    return 'the VolumeSnapshot CRDs are not in the sidecars build';
  return undefined;
}

/** The VolumeSnapshot CRD manifests of the snapshotter build. */
export function snapshotCrdFiles(): string[] {
  const dir = join(SIDECARS_DIR, 'crd');
  return readdirSync(dir)
    .filter((f) => f.endsWith('.yaml'))
    .map((f) => join(dir, f));
}

/** The running sidecars. */
export interface Sidecars {
  /** The last lines of each sidecar's log, for a failure message. */
  logs(lines?: number): string;
  /** Stops all (SIGTERM, then SIGKILL after 5 s) and waits for them to exit. */
  stop(): Promise<void>;
}

/**
 * Starts the three sidecars against `socket` and the cluster at `kubeconfig`; logs go to
 * `logDir`, or to `KVTS_CSI_SIDECARS_LOG_DIR` to keep them after the test (appended);
 * `provisionerArgs` are added to csi-provisioner's.
 */
export function startSidecars(
  socket: string,
  kubeconfig: string,
  logDir: string,
  provisionerArgs: string[] = [],
): Sidecars {
  const logsIn = process.env.KVTS_CSI_SIDECARS_LOG_DIR || logDir;
  const args: Record<(typeof BINARIES)[number], string[]> = {
    'csi-provisioner': [
      `--csi-address=${socket}`,
      `--kubeconfig=${kubeconfig}`,
      '--timeout=60s',
      V,
      ...provisionerArgs,
    ],
    'csi-snapshotter': [`--csi-address=${socket}`, `--kubeconfig=${kubeconfig}`, '--timeout=60s', V],
    'snapshot-controller': [`--kubeconfig=${kubeconfig}`, V, ...SNAPSHOT_CONTROLLER_FLAGS],
  };
  const procs: Array<{ name: string; proc: ChildProcess; log: string }> = BINARIES.map((name) => {
    const log = join(logsIn, `${name}.log`);
    const fd = openSync(log, 'a');
    const proc = spawn(join(SIDECARS_DIR, 'bin', name), args[name], { stdio: ['ignore', fd, fd] });
    return { name, proc, log };
  });
  return {
    logs(lines = 25) {
      return procs
        .map(({ name, log }) => {
          const text = existsSync(log) ? readFileSync(log, 'utf8').trimEnd().split('\n').slice(-lines) : [];
          return `--- ${name}:\n${text.join('\n')}`;
        })
        .join('\n');
    },
    async stop() {
      await Promise.all(
        procs.map(
          ({ proc }) =>
            new Promise<void>((resolve) => {
              if (proc.exitCode !== null || proc.signalCode !== null) return resolve();
              const kill = setTimeout(() => proc.kill('SIGKILL'), 5000);
              proc.once('exit', () => {
                clearTimeout(kill);
                resolve();
              });
              proc.kill('SIGTERM');
            }),
        ),
      );
    },
  };
}

type CrdObject = Record<string, unknown> & { metadata?: { name?: string; deletionTimestamp?: string } };
type CrdApi = {
  create(o: never): Promise<unknown>;
  read(o: never): Promise<unknown>;
  delete(o: never): Promise<unknown>;
};
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const readCrd = (objects: CrdApi, crd: CrdObject) =>
  objects.read(crd as never).then(
    (o) => o as CrdObject & { status?: { conditions?: Array<{ type: string; status: string }> } },
    () => undefined,
  );

/**
 * Creates the VolumeSnapshot CRDs (kept when present) and waits until each is Established
 * and not being deleted: a CRD another file deleted just before is still there, terminating,
 * and vanishes later (a full run's VolumeSnapshot create got 404 that way). Returns them.
 */
export async function installSnapshotCrds(objects: CrdApi, timeoutMs = 120_000): Promise<CrdObject[]> {
  const crds = snapshotCrdFiles().flatMap((f) =>
    parseAllDocuments(readFileSync(f, 'utf8'))
      .map((d) => d.toJSON() as CrdObject)
      .filter(Boolean),
  );
  const end = Date.now() + timeoutMs;
  for (const crd of crds) {
    for (;;) {
      const live = await readCrd(objects, crd);
      const established = live?.status?.conditions?.some(
        (c) => c.type === 'Established' && c.status === 'True',
      );
      if (live && !live.metadata?.deletionTimestamp && established) break;
      if (!live)
        await objects.create(crd as never).catch((e: { code?: number }) => {
          if (e.code !== 409) throw e;
        });
      if (Date.now() > end)
        throw new Error(
          `CRD ${crd.metadata?.name}: not Established (or still terminating) after ${timeoutMs} ms`,
        );
      await sleep(250);
    }
  }
  return crds;
}

/** Deletes the CRDs and waits until they are gone, so the next file finds none terminating. */
export async function removeSnapshotCrds(
  objects: CrdApi,
  crds: CrdObject[],
  timeoutMs = 120_000,
): Promise<void> {
  for (const crd of crds) await objects.delete(crd as never).catch(() => {});
  const end = Date.now() + timeoutMs;
  for (const crd of crds)
    while (await readCrd(objects, crd)) {
      if (Date.now() > end) {
        console.error(`CRD ${crd.metadata?.name} still there ${timeoutMs} ms after its deletion`);
        return;
      }
      await sleep(250);
    }
}
