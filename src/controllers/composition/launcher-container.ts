/**
 * Composes one virt-launcher with inversify (no decorators: `toConstantValue`,
 * `toResolvedValue` and `toDynamicValue` bindings), so an embedder can rebind any part
 * (its own driver factory, a different path map) before resolving the launcher.
 */

import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { Container } from 'inversify';
import type { DestinationStream } from 'pino';
import type { VirtualMachineInstance } from '../../api';
import { LAUNCHER_DIRS, type LauncherArgs, PVC_DISK_DEFAULTS } from '../common/launcher-args';
import { type PathMap, pathMapFromEnv } from '../common/path-map';
import { shortDir } from '../launcher-protocol/short-dir';
import { ComponentLog } from '../logging/component-log';
import { launcherVerbosity } from '../logging/launcher-verbosity';
import { LIBVIRT_DEBUG_LOGS_ENV, libvirtLogFilters } from '../logging/libvirt-debug-logs';
import { removeContainerDiskCopies } from '../virt-launcher/container-disk-cleanup';
import { type LauncherDriverFactory, launcherDriverFactories } from '../virt-launcher/drivers';
import { GuestNetwork } from '../virt-launcher/guest-network';
import { IMAGE_ROOT_ENV } from '../virt-launcher/image-dirs';
import { VirtLauncher } from '../virt-launcher/launcher';
import { launcherConverterPaths } from '../virt-launcher/launcher-paths';
import { CONFIG_SOCKET_BUDGET, LibvirtDaemons } from '../virt-launcher/libvirt-daemons';
import { PasstBackend } from '../virt-launcher/passt-process';
import { chownFiles, chownTree, guestDiskFiles } from '../virt-launcher/qemu-ownership';
import { probeAhead, timedStep, withLoggedSync } from '../virt-launcher/start-steps-log';
import { VolumePreparer } from '../virt-launcher/volume-prep';
import { accessCredentialSecretDir } from '../virt-launcher/volume-sources';

/** Service identifiers of the launcher composition. */
export const LauncherTokens = {
  args: Symbol.for('kubevirt-ts.launcher.LauncherArgs'),
  env: Symbol.for('kubevirt-ts.launcher.Env'),
  pathMap: Symbol.for('kubevirt-ts.launcher.PathMap'),
  driverFactories: Symbol.for('kubevirt-ts.launcher.DriverFactories'),
  launcher: Symbol.for('kubevirt-ts.launcher.VirtLauncher'),
} as const;

/** Inputs of {@link createLauncherContainer}. */
export interface LauncherComposition {
  args: LauncherArgs;
  env?: NodeJS.ProcessEnv;
  /** Extra or replacement drivers by `--hypervisor` name. */
  driverFactories?: Record<string, LauncherDriverFactory>;
  finalWaitMs?: number;
  /** Where the JSON log lines go (default stderr). */
  logDestination?: DestinationStream;
}

/** Binds the launcher's parts; `container.get(LauncherTokens.launcher)` builds it. */
export function createLauncherContainer(c: LauncherComposition): Container {
  const container = new Container();
  const env = c.env ?? process.env;
  container.bind<LauncherArgs>(LauncherTokens.args).toConstantValue(c.args);
  container.bind<NodeJS.ProcessEnv>(LauncherTokens.env).toConstantValue(env);
  container
    .bind<PathMap>(LauncherTokens.pathMap)
    .toResolvedValue((e: NodeJS.ProcessEnv) => pathMapFromEnv(e), [LauncherTokens.env])
    .inSingletonScope();
  container
    .bind<Record<string, LauncherDriverFactory>>(LauncherTokens.driverFactories)
    .toConstantValue({ ...launcherDriverFactories, ...(c.driverFactories ?? {}) });
  container
    .bind<VirtLauncher>(LauncherTokens.launcher)
    .toDynamicValue((ctx) => {
      const args = ctx.get<LauncherArgs>(LauncherTokens.args);
      const map = ctx.get<PathMap>(LauncherTokens.pathMap);
      const e = ctx.get<NodeJS.ProcessEnv>(LauncherTokens.env);
      const factories = ctx.get<Record<string, LauncherDriverFactory>>(LauncherTokens.driverFactories);
      const factory = factories[args.hypervisor];
      if (!factory) {
        throw new Error(
          `virt-launcher: --hypervisor ${args.hypervisor}: no such driver (known: ${Object.keys(factories).join(', ')})`,
        );
      }
      const paths = launcherConverterPaths(args, map);
      // QEMU binds its serial, VNC and agent sockets under these: keep them short.
      paths.privateDir = shortDir(paths.privateDir);
      paths.libvirtRunDir = shortDir(paths.libvirtRunDir, 90);
      const imageRoot = e[IMAGE_ROOT_ENV] || undefined;
      const volumes = new VolumePreparer({
        paths,
        imageRoot,
        pathMap: map,
        pvcLimits: {
          lessPVCSpaceToleration: args.lessPVCSpaceToleration ?? PVC_DISK_DEFAULTS.lessPVCSpaceToleration,
          minimumReservePVCBytes: args.minimumReservePVCBytes ?? PVC_DISK_DEFAULTS.minimumReservePVCBytes,
        },
      });
      // JSON lines, each naming the VMI this launcher runs (upstream's log.Log.Object(vmi)).
      const { v, problem } = launcherVerbosity(e);
      const logger = new ComponentLog('virt-launcher', v, c.logDestination).forVmi({
        metadata: { namespace: args.namespace, name: args.name, uid: args.uid },
      });
      if (problem) logger.warn(problem);
      const log = (m: string) => logger.info(m);
      const daemons = ownLibvirt(args, e, map, v, log);
      const qemu = daemons?.qemuUser;
      // A root launcher (local pod runtime) runs QEMU as 107: hand it the pod's own files.
      const podDirs = [
        LAUNCHER_DIRS.private,
        LAUNCHER_DIRS.ephemeralDisks,
        LAUNCHER_DIRS.libvirtRuntime,
        args.containerDiskDir,
      ].map((d) => map.toHost(d));
      const handOver =
        qemu && qemu.uid !== (process.getuid?.() ?? 0)
          ? async (vmi: VirtualMachineInstance) => {
              for (const d of podDirs) await chownTree(d, qemu.uid, qemu.gid);
              await chownFiles(guestDiskFiles(vmi, map), qemu.uid, qemu.gid);
            }
          : async () => {};
      const socketDir = shortDir(map.toHost(join(args.shareDir, 'sockets')));
      const network = new GuestNetwork(socketDir, log);
      // passt where the launcher's libvirt has no passt backend (./passt-process).
      const passt = new PasstBackend({ privateDir: paths.privateDir, qemuUser: qemu, log });
      return new VirtLauncher({
        namespace: args.namespace,
        name: args.name,
        uid: args.uid,
        gracePeriodSeconds: args.gracePeriodSeconds,
        socketDir,
        blockVolumes: volumes.blockVolumes,
        accessCredentialDir: (secret) => map.toHost(accessCredentialSecretDir(secret)),
        hotplugDir: paths.hotplugDiskDir,
        connectDriver: async () => {
          const driver = await timedStep(log, `connected to the ${args.hypervisor} driver`, () =>
            factory({
              paths,
              imageRoot,
              env: e,
              backingFormats: volumes.backingFormats,
              blockVolumes: volumes.blockVolumes,
              libvirt: daemons ? () => daemons.start() : undefined,
            }),
          );
          // The fake driver runs no QEMU: nothing to probe ahead.
          if (args.hypervisor !== 'fake') probeAhead(driver, log);
          return withLoggedSync(driver, log);
        },
        // The in-memory fake driver runs no QEMU: it needs no disk files.
        prepareVolumes:
          args.hypervisor === 'fake'
            ? undefined
            : (vmi) =>
                timedStep(log, 'volumes prepared', async () => {
                  await volumes.prepare(vmi);
                  await handOver(vmi);
                }),
        // The fake driver runs no guest: no DHCP server, no taps.
        prepareNetwork: args.hypervisor === 'fake' ? undefined : (vmi) => network.prepare(vmi),
        networkReport: () => network.report(),
        networkBackends: args.hypervisor === 'fake' ? undefined : passt,
        onExit: async () => {
          await daemons?.stop();
          // The pod's volume containers end once their copies are gone: the pod completes.
          await removeContainerDiskCopies(paths.containerDiskDir);
        },
        syncOptions: { useEmulation: args.allowEmulation },
        finalWaitMs: c.finalWaitMs,
        log,
      });
    })
    .inSingletonScope();
  return container;
}

/**
 * The launcher's own virtqemud/libvirtd and virtlogd (the default), or none: with the
 * fake driver, or when `KUBEVIRT_TS_LIBVIRT_URI` names a shared daemon to use instead.
 */
function ownLibvirt(
  args: LauncherArgs,
  env: NodeJS.ProcessEnv,
  map: PathMap,
  verbosity: number,
  log: (m: string) => void,
): LibvirtDaemons | undefined {
  if (args.hypervisor === 'fake' || env.KUBEVIRT_TS_LIBVIRT_URI) return undefined;
  const real = map.toHost(LAUNCHER_DIRS.libvirtRuntime);
  mkdirSync(join(real, 'config'), { recursive: true });
  // Sockets under the runtime dir: run/libvirt/virtlogd-sock, qemu/run/... (short);
  // under the config dir the deepest QEMU socket paths, hence the shorter link.
  const runtimeDir = shortDir(real, 48);
  const configDir = shortDir(join(real, 'config'), CONFIG_SOCKET_BUDGET, 8);
  // Launchers of one host share QEMU's probed capabilities (local mode: a root launcher).
  const capsCacheDir =
    env.KUBEVIRT_TS_LIBVIRT_CAPS_CACHE ||
    (process.getuid?.() === 0 ? '/var/cache/kubevirt-ts/libvirt-qemu-caps' : undefined);
  return new LibvirtDaemons({
    runtimeDir,
    configDir,
    capsCacheDir,
    logFilters: libvirtLogFilters(
      args.libvirtLogFilters,
      verbosity,
      env[LIBVIRT_DEBUG_LOGS_ENV] !== undefined,
    ),
    daemon: env.KUBEVIRT_TS_LIBVIRT_DAEMON || undefined,
    log,
  });
}
