/**
 * The migration proxy of a handler on a kubelet node (upstream's cmd/virt-handler
 * building `NewMigrationProxyManager` and vm.go's socket layout): its listeners bind
 * the handler's pod address, TLS material is read from the mounted Secrets each time a
 * migration's proxies start (so a rotated certificate is used without a restart), and
 * the sockets sit where upstream's do inside the launcher pods:
 *
 * - the target launcher's own libvirt daemon (session mode) in its `libvirt-runtime`
 *   emptyDir (`/var/run/libvirt/run/libvirt/<daemon socket>` in the pod);
 * - QEMU's migration (49152) and block (49153) streams at
 *   `/var/run/kubevirt/migrationproxy/<vmi uid>-<port>-source.sock` in the `public`
 *   emptyDir: the source handler makes the source's sockets at that path in the source
 *   pod, libvirt gives the target QEMU the same URI, so it listens at the same path in
 *   the target pod, where the target handler's listeners connect.
 */
import { chownSync, existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { LAUNCHER_DIRS } from '../../common/launcher-args';
import { podEmptyDirPath } from '../../launcher-protocol/paths';
import { shortDir } from '../../launcher-protocol/short-dir';
import { MigrationProxyManager, type TargetSocket } from './manager';
import { migrationPorts, proxyKey, sourceUnixFile } from './ports';
import type { MigrationTlsMaterial } from './tls';
import type { MigrationProxyWiring } from './wiring';

/** The account QEMU runs as in every launcher pod (upstream's `qemu`, 107). */
export const LAUNCHER_QEMU_USER = { uid: 107, gid: 107 } as const;

/** PEM files of one certificate pair. */
export interface CertFiles {
  cert: string;
  key: string;
}

/** What a kubelet node's handler builds its migration proxy from. */
export interface KubeletMigrationProxyOptions {
  /** The kubelet's pod root as the handler sees it (`/var/lib/kubelet/pods`). */
  podsRoot: string;
  /** The address the target listeners bind and advertise (the handler pod's IP). */
  address: string;
  /** The serving (node) pair: `kubevirt-virt-handler-server-certs`. */
  server: CertFiles;
  /** The client pair: `kubevirt-virt-handler-certs`. */
  client: CertFiles;
  /** The KubeVirt CA bundle both sides verify the peer with. */
  caFile: string;
  /** `spec.configuration.migrations.disableTLS` in force. */
  disableTls: () => boolean;
  /** The kernel-copy relay for plain connections (relay.ts); undefined: Node copies them. */
  relay?: string;
  /** The OpenSSL relay for TLS connections (relay.ts); undefined: Node's TLS. */
  tlsRelay?: string;
  log?: (message: string) => void;
}

/** The pod's emptyDir `public`, mounted at {@link LAUNCHER_DIRS.share}. */
const PUBLIC_VOLUME = 'public';
/** The pod's emptyDir `libvirt-runtime`, mounted at {@link LAUNCHER_DIRS.libvirtRuntime}. */
const RUNTIME_VOLUME = 'libvirt-runtime';
/** The session daemon's sockets under the runtime dir (XDG_RUNTIME_DIR `run/`; launcher's libvirt-daemons.ts). */
const DAEMON_SOCKETS = ['virtqemud-sock', 'libvirt-sock'];
/** Bytes under a pod's `public` dir: `migrationproxy/<36-byte uid>-49153-source.sock`. */
const PROXY_NAME_BUDGET = 70;

/**
 * A pod's `public` dir as the handler reaches sockets in it: kubelet's path is too long
 * for a unix socket path (107 bytes), so a short link to it where needed (short-dir.ts).
 */
function publicDir(podsRoot: string, podUid: string): string {
  return shortDir(podEmptyDirPath(podsRoot, podUid, PUBLIC_VOLUME), PROXY_NAME_BUDGET);
}

function readMaterial(pair: CertFiles, caFile: string): MigrationTlsMaterial {
  return { cert: readFileSync(pair.cert), key: readFileSync(pair.key), ca: readFileSync(caFile) };
}

/** The target launcher's daemon socket on the host: virtqemud's when present, else libvirtd's. */
export function targetDaemonSocket(podsRoot: string, podUid: string): string {
  const dir = shortDir(join(podEmptyDirPath(podsRoot, podUid, RUNTIME_VOLUME), 'run', 'libvirt'), 16);
  const found = DAEMON_SOCKETS.map((s) => join(dir, s)).find((p) => existsSync(p));
  return found ?? join(dir, DAEMON_SOCKETS[1]);
}

/**
 * The target launcher's sockets for a migration of VMI `vmiUid` (upstream's
 * handleTargetMigrationProxy): its daemon (key port 0) and QEMU's streams (49152, and
 * 49153 for a block migration). Makes the pod's `migrationproxy` directory, owned by
 * QEMU's user, for QEMU's listening sockets.
 */
export function kubeletTargetSockets(
  podsRoot: string,
  podUid: string,
  vmiUid: string,
  blockMigration: boolean,
): TargetSocket[] {
  const base = publicDir(podsRoot, podUid);
  const dir = join(base, 'migrationproxy');
  mkdirSync(dir, { recursive: true, mode: 0o750 });
  if (statSync(dir).uid !== LAUNCHER_QEMU_USER.uid)
    chownSync(dir, LAUNCHER_QEMU_USER.uid, LAUNCHER_QEMU_USER.gid);
  return [
    { port: 0, unixPath: targetDaemonSocket(podsRoot, podUid) },
    ...migrationPorts(blockMigration).map((port) => ({
      port,
      unixPath: sourceUnixFile(base, proxyKey(vmiUid, port)),
    })),
  ];
}

/** A path under a pod's `public` emptyDir on the host (or its short link), as the launcher sees it. */
export function publicPathInPod(podsRoot: string, podUid: string, hostPath: string): string {
  const rel = relative(publicDir(podsRoot, podUid), hostPath);
  if (rel.startsWith('..') || rel.startsWith('/'))
    throw new Error(`${hostPath} is not in pod ${podUid}'s ${PUBLIC_VOLUME} volume`);
  return join(LAUNCHER_DIRS.share, rel);
}

/** The handler's migration proxy on a kubelet node. */
export function kubeletMigrationProxy(o: KubeletMigrationProxyOptions): MigrationProxyWiring {
  const manager = new MigrationProxyManager({
    bindHost: o.address,
    serverTls: () => readMaterial(o.server, o.caFile),
    clientTls: () => readMaterial(o.client, o.caFile),
    disableTls: o.disableTls,
    socketOwner: { ...LAUNCHER_QEMU_USER },
    relay: o.relay,
    tlsRelay: o.tlsRelay,
    log: o.log,
  });
  return {
    manager,
    address: o.address,
    targetSockets: (podUid, vmiUid, blockMigration = false) =>
      kubeletTargetSockets(o.podsRoot, podUid, vmiUid, blockMigration),
    sourceDir: (podUid) => publicDir(o.podsRoot, podUid),
    podPath: (podUid, hostPath) => publicPathInPod(o.podsRoot, podUid, hostPath),
    daemon: 'session',
  };
}
