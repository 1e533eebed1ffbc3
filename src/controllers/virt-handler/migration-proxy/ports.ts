/**
 * The migration proxy's ports and socket names, as upstream's
 * (pkg/virt-handler/migration-proxy): libvirt's connection to the target daemon has no
 * fixed port (key port 0), QEMU's direct migration stream uses 49152 and the block
 * (disk) migration stream 49153. On the target node each gets a TCP listener on a random
 * port; the source node maps each to a unix socket in the source pod's directory.
 */
import { join } from 'node:path';

/** QEMU's migration stream (upstream LibvirtDirectMigrationPort). */
export const LIBVIRT_DIRECT_MIGRATION_PORT = 49152;
/** QEMU's block migration (NBD) stream (upstream LibvirtBlockMigrationPort). */
export const LIBVIRT_BLOCK_MIGRATION_PORT = 49153;

/** The ports a migration needs: the direct stream, and the block stream when disks are copied. */
export function migrationPorts(blockMigration: boolean): number[] {
  return blockMigration
    ? [LIBVIRT_DIRECT_MIGRATION_PORT, LIBVIRT_BLOCK_MIGRATION_PORT]
    : [LIBVIRT_DIRECT_MIGRATION_PORT];
}

/** A proxy's key: the VMI's uid, and the port it stands for unless it is libvirt's own (0). */
export function proxyKey(id: string, port: number): string {
  return port === 0 ? id : `${id}-${port}`;
}

/** The source's unix socket for one proxy key, under the source pod's base directory. */
export function sourceUnixFile(baseDir: string, key: string): string {
  return join(baseDir, 'migrationproxy', `${key}-source.sock`);
}
