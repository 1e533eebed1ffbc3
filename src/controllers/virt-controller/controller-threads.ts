/**
 * How many workers each of virt-controller's controllers runs: upstream's defaults and
 * flags (pkg/virt-controller/watch/application.go: `defaultControllerThreads` 3, the VMI
 * controller 10, the snapshot controller 6, each set by `--<name>-controller-threads`).
 * The VMI controller gets the most because every launcher pod and virt-handler status
 * change lands on its queue; the VM controller's 3 are upstream's too.
 */

/** Upstream's worker counts, by its flag's stem (`vmi` for `--vmi-controller-threads`). */
export const CONTROLLER_THREADS = {
  node: 3,
  vmi: 10,
  rs: 3,
  pool: 3,
  vm: 3,
  migration: 3,
  evacuation: 3,
  snapshot: 6,
  restore: 3,
  export: 3,
  clone: 3,
} as const;

/** A worker count per controller group (the stems of {@link CONTROLLER_THREADS}). */
export type ControllerThreads = { -readonly [K in keyof typeof CONTROLLER_THREADS]: number };

/** The group of each controller this project registers, by the controller's name. */
const GROUP: Record<string, keyof ControllerThreads> = {
  node: 'node',
  vmi: 'vmi',
  replicaset: 'rs',
  pool: 'pool',
  vm: 'vm',
  migration: 'migration',
  evacuation: 'evacuation',
  // Upstream's one snapshot controller runs both queues with its threads.
  vmsnapshot: 'snapshot',
  vmsnapshotcontent: 'snapshot',
  vmrestore: 'restore',
  vmexport: 'export',
  vmclone: 'clone',
};

/** Upstream's `defaultControllerThreads`. */
const DEFAULT_THREADS = 3;

/**
 * Loops over a single key that upstream runs with one hard-coded worker: the outdated
 * launcher updater, upstream's workload updater proper, keyed by the KubeVirt object (a
 * second worker could never get a key).
 */
const SINGLE_KEY = new Set(['workload-updater-outdated']);

/** The flag that sets group `g` (upstream's spelling). */
export const threadsFlag = (g: keyof ControllerThreads): string => `--${g}-controller-threads`;

/** The largest count a flag accepts: workers are promises, but each holds a queue key. */
export const MAX_THREADS = 64;

/**
 * Workers for controller `name`: `threads` for its group if set, else `workers` (one
 * count for every controller, for tests and benches), else upstream's default.
 * A controller outside the groups gets `workers` or 3 (upstream's default): the workload
 * updater, which upstream runs with one hard-coded worker over a single key (the KubeVirt
 * object) and this project per VMI.
 */
export function workersFor(
  name: string,
  o: { threads?: Partial<ControllerThreads>; workers?: number } = {},
): number {
  if (SINGLE_KEY.has(name)) return 1;
  const g = GROUP[name];
  return (g && o.threads?.[g]) || o.workers || (g ? CONTROLLER_THREADS[g] : DEFAULT_THREADS);
}

/**
 * The per-group flags' values checked (whole numbers from 1 to {@link MAX_THREADS});
 * unset ones are left out. Errors name the flag.
 */
export function checkThreads(
  flags: Partial<Record<keyof ControllerThreads, string>>,
): Partial<ControllerThreads> {
  const out: Partial<ControllerThreads> = {};
  for (const g of Object.keys(CONTROLLER_THREADS) as (keyof ControllerThreads)[]) {
    const v = flags[g];
    if (v === undefined) continue;
    if (!/^\d{1,3}$/.test(v) || Number(v) < 1 || Number(v) > MAX_THREADS)
      throw new Error(`${threadsFlag(g)}: ${JSON.stringify(v)} is not a number from 1 to ${MAX_THREADS}`);
    out[g] = Number(v);
  }
  return out;
}
