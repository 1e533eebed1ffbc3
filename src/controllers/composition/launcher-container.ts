/**
 * Composes one virt-launcher with inversify (no decorators: `toConstantValue`,
 * `toResolvedValue` and `toDynamicValue` bindings), so an embedder can rebind any part
 * (its own driver factory, a different path map) before resolving the launcher.
 */

import { join } from 'node:path';
import { Container } from 'inversify';
import type { LauncherArgs } from '../shared/launcher-args';
import { type LauncherDriverFactory, launcherDriverFactories } from '../virt-launcher/drivers';
import { IMAGE_ROOT_ENV } from '../virt-launcher/image-dirs';
import { VirtLauncher } from '../virt-launcher/launcher';
import { launcherConverterPaths } from '../virt-launcher/launcher-paths';
import { type PathMap, pathMapFromEnv } from '../virt-launcher/path-map';
import { shortDir } from '../virt-launcher/short-dir';
import { VolumePreparer } from '../virt-launcher/volume-prep';

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
      const volumes = new VolumePreparer({ paths, imageRoot, pathMap: map });
      return new VirtLauncher({
        namespace: args.namespace,
        name: args.name,
        uid: args.uid,
        gracePeriodSeconds: args.gracePeriodSeconds,
        socketDir: shortDir(map.toHost(join(args.shareDir, 'sockets'))),
        connectDriver: () => factory({ paths, imageRoot, env: e, backingFormats: volumes.backingFormats }),
        // The in-memory fake driver runs no QEMU: it needs no disk files.
        prepareVolumes:
          args.hypervisor === 'fake'
            ? undefined
            : async (vmi) => {
                await volumes.prepare(vmi);
              },
        syncOptions: { useEmulation: args.allowEmulation },
        finalWaitMs: c.finalWaitMs,
      });
    })
    .inSingletonScope();
  return container;
}
