/**
 * `kubevirt-ts csi-driver --endpoint unix:///csi/csi.sock --node-id NODE`: the CSI driver
 * `csi.kubevirt-ts.io` (Identity, Controller and Node services on one unix socket), its
 * pool a loop-mounted XFS with reflink (`--pool-dir`, made from `--pool-image` of
 * `--pool-size` when the directory is not a mount point yet), registered with the kubelet
 * when `--registration-dir` names its plugins_registry directory. Thin: check the flags,
 * start, stop on SIGTERM/SIGINT (the pool stays mounted: volumes in use stay usable).
 */
import { hostname } from 'node:os';
import { isAbsolute } from 'node:path';
import type { Command } from 'commander';
import { projectVersion } from '../../api/served-version';
import { bytesOf } from '../../controllers/common/quantity';

interface CsiDriverFlags {
  endpoint: string;
  nodeId: string;
  poolDir: string;
  poolImage: string;
  poolSize: string;
  registrationDir?: string;
  kubeletRegistrationPath?: string;
}

/** The flags, checked; errors name the flag. */
export function checkCsiDriverFlags(f: CsiDriverFlags) {
  const m = /^unix:\/\/(\/.+)$/.exec(f.endpoint) ?? /^(\/.+)$/.exec(f.endpoint);
  if (!m) throw new Error(`--endpoint: ${JSON.stringify(f.endpoint)} is not unix:///absolute/path`);
  for (const [flag, v] of [
    ['--pool-dir', f.poolDir],
    ['--pool-image', f.poolImage],
    ['--registration-dir', f.registrationDir],
    ['--kubelet-registration-path', f.kubeletRegistrationPath],
  ] as const)
    if (v !== undefined && (!isAbsolute(v) || v.split('/').includes('..')))
      throw new Error(`${flag}: ${JSON.stringify(v)} is not an absolute path without ..`);
  let size: bigint | undefined;
  try {
    size = bytesOf(f.poolSize, '--pool-size');
  } catch (err) {
    throw new Error(`--pool-size: ${(err as Error).message}`);
  }
  if (size === undefined || size < 512n * 1024n * 1024n || size > BigInt(Number.MAX_SAFE_INTEGER))
    throw new Error(`--pool-size: ${JSON.stringify(f.poolSize)} is not a size from 512Mi up (e.g. 50Gi)`);
  return { socketPath: m[1], poolSizeBytes: Number(size) };
}

/** Registers `csi-driver` on the program. */
export function registerCsiDriverCommand(program: Command): void {
  program
    .command('csi-driver')
    .description('run the CSI driver csi.kubevirt-ts.io: volumes, snapshots and clones in a reflink XFS pool')
    .option(
      '--endpoint <unix://path>',
      'the unix socket the CSI services are served on',
      'unix:///csi/csi.sock',
    )
    .option('--node-id <name>', "this node's name (topology.kubevirt-ts.io/node)", hostname())
    .option(
      '--pool-dir <dir>',
      'the storage pool: a mount point (mounted from --pool-image when not one yet)',
      '/var/lib/kubevirt-ts/csi/pool',
    )
    .option(
      '--pool-image <file>',
      'the sparse XFS image file the pool is made in when absent',
      '/var/lib/kubevirt-ts/csi/pool.img',
    )
    .option(
      '--pool-size <quantity>',
      'the pool image size when it is made (sparse: takes what is written)',
      '50Gi',
    )
    .option(
      '--registration-dir <dir>',
      "the kubelet's plugins_registry directory: register the driver with the kubelet there",
    )
    .option(
      '--kubelet-registration-path <path>',
      'the CSI socket as the kubelet sees it (default: the --endpoint path)',
    )
    .action(async (f: CsiDriverFlags) => {
      const checked = checkCsiDriverFlags(f);
      const { startCsiDriver } = await import('../../controllers/csi-driver/csi-driver');
      const log = (m: string) =>
        process.stderr.write(
          `${JSON.stringify({ component: 'csi-driver', msg: m, ts: new Date().toISOString() })}\n`,
        );
      const driver = await startCsiDriver({
        socketPath: checked.socketPath,
        poolDir: f.poolDir,
        poolImage: f.poolImage,
        poolSizeBytes: checked.poolSizeBytes,
        nodeId: f.nodeId,
        version: projectVersion(),
        kubeletRegistration: f.registrationDir
          ? { registryDir: f.registrationDir, csiEndpoint: f.kubeletRegistrationPath }
          : undefined,
        log,
      });
      await new Promise<void>((resolve) => {
        process.once('SIGTERM', resolve);
        process.once('SIGINT', resolve);
      });
      await driver.stop();
      process.exit(0);
    });
}
