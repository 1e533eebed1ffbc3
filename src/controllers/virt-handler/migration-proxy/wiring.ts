/**
 * How a handler's migration roles use the migration proxy (upstream's vm.go around
 * StartTargetListener / StartSourceListener): the target's listeners lead to the target
 * launcher's sockets; the source's sockets stand for the advertised ports and the source
 * launcher is given them as its URIs.
 */
import type { VirtualMachineInstanceMigrationState } from '../../../api/generated/types';
import type { MigrationRequestOptions } from '../../launcher-protocol/migration-options';
import type { MigrationProxyManager, TargetSocket } from './manager';
import { LIBVIRT_DIRECT_MIGRATION_PORT } from './ports';

/** The migration proxy of a handler and where its sockets are. */
export interface MigrationProxyWiring {
  manager: MigrationProxyManager;
  /** The node address the target advertises (its listeners bind it). */
  address: string;
  /** The target launcher's sockets for a migration: libvirt's daemon (port 0), QEMU's 49152/49153 when it has them. */
  targetSockets(podUid: string, vmiUid: string): TargetSocket[];
  /** Where the source's sockets go (the source launcher must see them at the same path). */
  sourceDir(podUid: string): string;
  /** The target daemon's libvirt URI path: `system` (a shared daemon) or `session` (a launcher's own). */
  daemon: 'system' | 'session';
}

/**
 * The source launcher's options through the proxy: when the target advertised listener
 * ports, libvirt's connection goes to `qemu+unix:///<daemon>?socket=<source socket>` and
 * QEMU's stream to `unix://<49152 socket>` when the target offers one (otherwise to the
 * target address, as without the proxy). Unchanged when the target advertised no ports.
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
  const files = await p.manager.startSource(vmiUid, ms.targetNodeAddress, ports, p.sourceDir(podUid));
  if (!files[0]) return options;
  const out = { ...options, TargetURI: `qemu+unix:///${p.daemon}?socket=${files[0]}` };
  const direct = files[LIBVIRT_DIRECT_MIGRATION_PORT];
  if (direct) out.MigrateURI = `unix://${direct}`;
  return out;
}
