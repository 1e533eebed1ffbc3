/**
 * The set-up the binding tests without QEMU share: a launcher pod and a peer pod attached
 * by the real CNI plugins, a stand-in guest (a namespace whose eth0 is a veth port of the
 * launcher's k6t-eth0 with the guest MAC), the launcher's DHCP server, busybox's udhcpc in
 * the guest, and echo servers to carry real TCP. Cleanup checks that nothing is left.
 */
import { type ChildProcess, execFileSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect } from 'vitest';
import {
  netnsName,
  PodNetwork,
  type PodNetworkInfo,
} from '../../../../src/controllers/local/pod-runtime/pod-network';
import { scopedSnapshot } from '../../../support/net-snapshot';
import { ECHO_CLIENT, ECHO_SERVER, inNs, type NsProcess, startInNs } from '../../../support/netns-process';

/** Names of one test file's objects; each file picks its own so parallel files never meet. */
export interface PodPairOptions {
  /** Prefix of the node bridge's name (the pid tag is appended). */
  bridgePrefix: string;
  /** Prefix of the stand-in guest's namespace name (the pid tag is appended). */
  guestNsPrefix: string;
  /** Four hex digits that start the launcher pod's UID, and the peer pod's. */
  launcherUidPrefix: string;
  peerUidPrefix: string;
  /** The pod network's subnet. */
  subnet: string;
  /** Prefix of the temporary directory. */
  tmpPrefix: string;
}

/** What {@link usePodPair} sets up; `root` and `net` are there from beforeAll on. */
export interface PodPair {
  readonly bridge: string;
  readonly guestNs: string;
  readonly launcherUid: string;
  readonly peerUid: string;
  /** Temporary directory: `launcher/`, `peer/` (pod dirs), `sockets/` (the launcher's). */
  root: string;
  net: PodNetwork;
  /** Processes to kill in afterAll. */
  readonly children: ChildProcess[];
}

function ignoreMissing(cmd: string, args: string[]): void {
  try {
    execFileSync(cmd, args, { stdio: 'ignore' });
  } catch {
    // not made
  }
}

/**
 * Registers beforeAll/afterAll hooks for a launcher and a peer pod on a pod network of
 * their own; afterAll tears everything down and expects the host's network state (scoped
 * to these names) as it was before.
 */
export function usePodPair(opts: PodPairOptions): PodPair {
  const tag = process.pid % 10000;
  const hex = tag.toString(16).padStart(4, '0');
  const pair = {
    bridge: `${opts.bridgePrefix}${tag}`,
    guestNs: `${opts.guestNsPrefix}${tag}`,
    launcherUid: `${opts.launcherUidPrefix}${hex}-0000-4000-8000-000000000001`,
    peerUid: `${opts.peerUidPrefix}${hex}-0000-4000-8000-000000000002`,
    root: '',
    net: undefined as unknown as PodNetwork,
    children: [] as ChildProcess[],
  };
  const snapshot = () =>
    scopedSnapshot([netnsName(pair.launcherUid), netnsName(pair.peerUid), pair.guestNs], pair.bridge);
  let before: ReturnType<typeof scopedSnapshot>;

  beforeAll(() => {
    before = snapshot();
    pair.root = mkdtempSync(join(tmpdir(), opts.tmpPrefix));
    pair.net = new PodNetwork({
      bridge: pair.bridge,
      subnet: opts.subnet,
      pluginDir: '/usr/lib/cni',
      dataDir: join(pair.root, 'cni'),
    });
    for (const d of ['launcher', 'peer', 'sockets']) mkdirSync(join(pair.root, d));
  });

  afterAll(async () => {
    for (const c of pair.children) c.kill('SIGKILL');
    await pair.net.tearDown(pair.launcherUid, join(pair.root, 'launcher')).catch(() => undefined);
    await pair.net.tearDown(pair.peerUid, join(pair.root, 'peer')).catch(() => undefined);
    ignoreMissing('ip', ['netns', 'del', pair.guestNs]);
    ignoreMissing('ip', ['link', 'del', pair.bridge]);
    rmSync(pair.root, { recursive: true, force: true });
    expect(snapshot()).toEqual(before);
  });
  return pair;
}

/** The two pods attached, with their namespaces' names. */
export interface Pods {
  launcher: PodNetworkInfo;
  peer: PodNetworkInfo;
  /** The launcher's and the peer's network namespace names. */
  lns: string;
  pns: string;
}

/** Attaches both pods to the pod network. */
export async function attachPods(pair: PodPair): Promise<Pods> {
  const launcher = await pair.net.setUp(pair.launcherUid, join(pair.root, 'launcher'));
  const peer = await pair.net.setUp(pair.peerUid, join(pair.root, 'peer'));
  return { launcher, peer, lns: netnsName(pair.launcherUid), pns: netnsName(pair.peerUid) };
}

/**
 * Makes the stand-in guest: namespace `pair.guestNs` whose eth0 (MAC `mac`, plus any
 * `linkArgs` such as `['mtu', '1500']`) is the peer of port `gport` on the launcher's
 * k6t-eth0; lo and eth0 up, no address yet.
 */
export function addStandInGuest(pair: PodPair, lns: string, mac: string, linkArgs: string[] = []): void {
  const { guestNs } = pair;
  execFileSync('ip', ['netns', 'add', guestNs]);
  inNs(lns, 'ip', [
    'link',
    'add',
    'gport',
    'type',
    'veth',
    'peer',
    'name',
    'geth',
    'netns',
    `/run/netns/${guestNs}`,
  ]);
  inNs(lns, 'ip', ['link', 'set', 'gport', 'master', 'k6t-eth0', 'up']);
  inNs(guestNs, 'ip', ['link', 'set', 'geth', 'name', 'eth0', 'address', mac, ...linkArgs]);
  inNs(guestNs, 'ip', ['link', 'set', 'lo', 'up']);
  inNs(guestNs, 'ip', ['link', 'set', 'eth0', 'up']);
}

/** Starts a node process in `ns`; resolves once its output holds `marker`; killed in afterAll. */
export async function nodeIn(pair: PodPair, ns: string, args: string[], marker: string): Promise<NsProcess> {
  const p = await startInNs(ns, process.execPath, args, marker);
  pair.children.push(p.child);
  return p;
}

/** Starts the launcher's DHCP server (test/support/dhcp-server-main.ts) on the launcher's sockets. */
export function startDhcpServer(pair: PodPair, lns: string): Promise<NsProcess> {
  return nodeIn(
    pair,
    lns,
    ['--import', 'tsx', 'test/support/dhcp-server-main.ts', join(pair.root, 'sockets')],
    'ready',
  );
}

/**
 * Runs busybox's udhcpc on the guest's eth0 with `script` (a udhcpc hook that writes
 * `lease.txt` next to itself) and returns what the script wrote.
 */
export function takeLease(pair: PodPair, script: string): string {
  const path = join(pair.root, 'udhcpc.sh');
  writeFileSync(path, script);
  chmodSync(path, 0o755);
  inNs(pair.guestNs, 'busybox', ['udhcpc', '-i', 'eth0', '-n', '-q', '-f', '-t', '5', '-T', '1', '-s', path]);
  return readFileSync(join(pair.root, 'lease.txt'), 'utf8');
}

/** Starts an echo server on `port` in `ns` (killed in afterAll). */
export function echoServer(pair: PodPair, ns: string, port: number): Promise<NsProcess> {
  return nodeIn(pair, ns, ['-e', ECHO_SERVER, String(port)], 'ready');
}

/** Sends `bytes` from namespace `ns` to `ip:port`; returns the client's trimmed answer (`echoed N` or `error ...`). */
export function echoFrom(ns: string, ip: string, port: number, bytes: number): string {
  return inNs(ns, process.execPath, ['-e', ECHO_CLIENT, ip, String(port), String(bytes)]).trim();
}
