/**
 * What the cluster could change on the host beyond its own names (the state directory,
 * the bridge, the kubepods cgroups, which host-cleanup.ts handles): the firewall, the
 * kernel settings the kubelet tunes, and the directories it hardcodes. `up` records them
 * before anything starts (`<state>/host-before.json`); `down` puts the kernel settings
 * back, removes those directories if they were not there before, and reports any
 * firewall table or chain of the kubelet's that appeared meanwhile.
 *
 * The kubelet is kept off the firewall (kubelet.ts: `makeIPTablesUtilChains: false`), so
 * a table showing up here is a regression, reported rather than deleted: `down` never
 * removes firewall rules it cannot prove are the cluster's own.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * The kernel settings a kubelet with `protectKernelDefaults: false` (the default) sets at
 * start (pkg/kubelet/cm/container_manager_linux.go, setupKernelTunables).
 */
export const KUBELET_SYSCTLS = [
  'vm/overcommit_memory',
  'vm/panic_on_oom',
  'kernel/panic',
  'kernel/panic_on_oops',
  'kernel/keys/root_maxkeys',
  'kernel/keys/root_maxbytes',
] as const;

/**
 * Directories the kubelet creates whatever its --root-dir (the device-plugin registration
 * directory, /var/lib/kubelet/device-plugins, and the container log links).
 */
export const KUBELET_HOST_DIRS = ['/var/lib/kubelet', '/var/log/containers'] as const;

/** The host before `up`, as recorded in host-before.json. */
export interface HostState {
  /** {@link firewall}'s lines. */
  firewall: string[];
  /** {@link KUBELET_SYSCTLS} by name (/proc/sys relative path), as read. */
  sysctls: Record<string, string>;
  /** Which of {@link KUBELET_HOST_DIRS} exist. */
  dirs: string[];
}

/**
 * The host's nftables tables and chains (iptables-nft's included), one line each:
 * `table ip filter`, `chain ip filter KUBE-FIREWALL`; empty without nft.
 */
export function firewall(): string[] {
  let out: string;
  try {
    out = execFileSync('nft', ['-j', 'list', 'chains'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return [];
    throw err;
  }
  const tables = execFileSync('nft', ['-j', 'list', 'tables'], { encoding: 'utf8' });
  return firewallLines([out, tables]);
}

type NftItem = {
  table?: { family: string; name: string };
  chain?: { family: string; table: string; name: string };
};

/** The lines of {@link firewall} from `nft -j list chains` and `nft -j list tables` output. */
export function firewallLines(jsonOutputs: string[]): string[] {
  const lines = new Set<string>();
  for (const json of jsonOutputs) {
    for (const item of (JSON.parse(json) as { nftables: NftItem[] }).nftables) {
      if (item.table) lines.add(`table ${item.table.family} ${item.table.name}`);
      if (item.chain) lines.add(`chain ${item.chain.family} ${item.chain.table} ${item.chain.name}`);
    }
  }
  return [...lines].sort();
}

/**
 * The kubelet's firewall objects among `lines` (its chains are named KUBE-...: the
 * iptables hint, the canary, the firewall) and the tables holding them.
 */
export function kubeletFirewall(lines: string[]): string[] {
  const chains = lines.filter((l) => / KUBE-[A-Z0-9-]+$/.test(l) && l.startsWith('chain '));
  const tables = new Set(chains.map((c) => `table ${c.split(' ').slice(1, 3).join(' ')}`));
  return [...lines.filter((l) => tables.has(l)), ...chains];
}

function readSysctls(): Record<string, string> {
  const values: Record<string, string> = {};
  for (const name of KUBELET_SYSCTLS) {
    try {
      values[name] = readFileSync(join('/proc/sys', name), 'utf8').trim();
    } catch {
      // Not in this kernel: nothing to restore.
    }
  }
  return values;
}

/** The host as it is now. */
export function hostState(): HostState {
  return {
    firewall: firewall(),
    sysctls: readSysctls(),
    dirs: KUBELET_HOST_DIRS.filter((d) => existsSync(d)),
  };
}

const stateFile = (root: string) => join(root, 'host-before.json');

/**
 * Records the host before `up` starts anything. An earlier record that `down` could not
 * fully restore is kept: it, not the host as that cluster left it, is the host as found.
 */
export function recordHostState(root: string): void {
  if (existsSync(stateFile(root))) return;
  writeFileSync(stateFile(root), `${JSON.stringify(hostState(), null, 2)}\n`);
}

/** The firewall lines recorded before `up` (empty without a record). */
export function firewallBefore(root: string): string[] {
  if (!existsSync(stateFile(root))) return [];
  return (JSON.parse(readFileSync(stateFile(root), 'utf8')) as HostState).firewall;
}

/** Whether `root` holds a record `down` has not restored yet. */
export const hasHostRecord = (root: string) => existsSync(stateFile(root));

/**
 * At `down`, once the kubelet has stopped: writes back each kernel setting that changed
 * since {@link recordHostState}, removes each of {@link KUBELET_HOST_DIRS} that was not
 * there then, and returns what still differs (settings that could not be written back,
 * directories that could not be removed, kubelet firewall objects that were not there
 * before), as readable lines.
 * Removes host-before.json when nothing differs; does nothing without one.
 */
export function restoreHostState(root: string): string[] {
  const file = stateFile(root);
  if (!existsSync(file)) return [];
  const before = JSON.parse(readFileSync(file, 'utf8')) as HostState;
  const left: string[] = [];
  const now = readSysctls();
  for (const [name, value] of Object.entries(before.sysctls)) {
    if (now[name] === value) continue;
    try {
      writeFileSync(join('/proc/sys', name), value);
    } catch (err) {
      left.push(
        `sysctl ${name.replaceAll('/', '.')} = ${now[name]} (was ${value}: ${(err as Error).message})`,
      );
    }
  }
  for (const dir of KUBELET_HOST_DIRS) {
    if (!before.dirs || before.dirs.includes(dir) || !existsSync(dir)) continue;
    try {
      rmSync(dir, { recursive: true, force: true });
    } catch (err) {
      left.push(`directory ${dir} (not there before up: ${(err as Error).message})`);
    }
  }
  const had = new Set(before.firewall);
  for (const l of kubeletFirewall(firewall())) if (!had.has(l)) left.push(`firewall: ${l}`);
  if (left.length === 0) rmSync(file, { force: true });
  return left;
}
