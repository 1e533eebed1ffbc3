/**
 * How a handler's migration roles use the migration proxy (upstream's vm.go around
 * StartTargetListener / StartSourceListener): the target's listeners lead to the target
 * launcher's sockets; the source's sockets stand for the advertised ports and the source
 * launcher is given them as its URIs.
 */
import type { VirtualMachineInstanceMigrationState } from '../../../api/generated/types';
import type { MigrationRequestOptions } from '../../launcher-protocol/migration-options';
import { type MigrationProxyManager, migrationDisablesTls, type TargetSocket } from './manager';
import { LIBVIRT_BLOCK_MIGRATION_PORT, LIBVIRT_DIRECT_MIGRATION_PORT } from './ports';

/** The migration proxy of a handler and where its sockets are. */
export interface MigrationProxyWiring {
  manager: MigrationProxyManager;
  /** The node address the target advertises (its listeners bind it). */
  address: string;
  /** The target launcher's sockets for a migration: libvirt's daemon (port 0), QEMU's 49152 (and 49153 for a block migration). */
  targetSockets(podUid: string, vmiUid: string, blockMigration?: boolean): TargetSocket[];
  /** Where the source's sockets go, as this handler sees that directory. */
  sourceDir(podUid: string): string;
  /**
   * A source socket's path as the source launcher sees it (a kubelet pod sees its volume
   * at its mount path); without it, the launcher sees the handler's path.
   */
  podPath?(podUid: string, hostPath: string): string;
  /** The target daemon's libvirt URI path: `system` (a shared daemon) or `session` (a launcher's own). */
  daemon: 'system' | 'session';
}

/**
 * The source launcher's options through the proxy: when the target advertised listener
 * ports, libvirt's connection goes to `qemu+unix:///<daemon>?socket=<source socket>` and
 * QEMU's stream to `unix://<49152 socket>` when the target offers one (otherwise to the
 * target address, as without the proxy), the disks' stream to `unix://<49153 socket>`
 * when it offers that one. Unchanged when the target advertised no ports.
 */
export async function proxiedOptions(
  p: MigrationProxyWiring,
  vmiUid: string,
  ms: VirtualMachineInstanceMigrationState,
  podUid: string,
  options: MigrationRequestOptions,
): Promise<MigrationRequestOptions> {
  const ports = ms.targetDirectMigrationNodePorts;
  if (!ports || !ms.targetNodeAddress) return options;
  const files = await p.manager.startSource(
    vmiUid,
    ms.targetNodeAddress,
    ports,
    p.sourceDir(podUid),
    migrationDisablesTls(ms),
  );
  const inPod = (f: string | undefined) => (f && p.podPath ? p.podPath(podUid, f) : f);
  const daemon = inPod(files[0]);
  if (!daemon) return options;
  const out = { ...options, TargetURI: `qemu+unix:///${p.daemon}?socket=${daemon}` };
  const direct = inPod(files[LIBVIRT_DIRECT_MIGRATION_PORT]);
  if (direct) out.MigrateURI = `unix://${direct}`;
  const disks = inPod(files[LIBVIRT_BLOCK_MIGRATION_PORT]);
  if (disks) out.DisksURI = `unix://${disks}`;
  return out;
}
