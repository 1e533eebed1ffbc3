/**
 * The drivers a launcher process can run, by the name its `--hypervisor` flag gives:
 * `libvirt` (KVM), `emulation` (the libvirt driver forced to TCG) and `fake` (in memory,
 * for tests). Each gets the launcher's converter paths, so domains refer to the pod's
 * directories.
 */
import type { ConverterPaths } from '../../converter';
import { convertVMI } from '../../converter';
import type { HypervisorDriver } from '../../drivers/driver';
import { FakeDriver } from '../../drivers/fake/index';
import { LibvirtDriver } from '../../drivers/libvirt-driver/index';
import { withKernelBootDir } from './launcher-paths';
import type { LibvirtEndpoint } from './libvirt-daemons';

/** What a launcher driver factory gets. */
export interface LauncherDriverContext {
  /** Converter paths of this launcher (host paths). */
  paths: ConverterPaths;
  /**
   * Backing-file format per containerDisk volume, filled by the launcher's volume
   * preparation before each sync (read at render time, so pass the live object).
   */
  backingFormats?: Record<string, 'raw' | 'qcow2'>;
  /** Volumes that are block devices, filled by the volume preparation (read at render time). */
  blockVolumes?: ReadonlySet<string>;
  /** Root of the local image store, if any. */
  imageRoot?: string;
  /** The process environment (KUBEVIRT_TS_LIBVIRT_URI, KUBEVIRT_TS_LIBVIRT_SOCKET). */
  env: NodeJS.ProcessEnv;
  /**
   * The launcher's own libvirt daemon (started on first call); without it the driver
   * connects to `KUBEVIRT_TS_LIBVIRT_URI` (a shared daemon, default qemu:///system).
   */
  libvirt?: () => Promise<LibvirtEndpoint>;
}

/** Builds a driver for one launcher. */
export type LauncherDriverFactory = (ctx: LauncherDriverContext) => Promise<HypervisorDriver>;

function libvirt(name: string, allowKvm: boolean): LauncherDriverFactory {
  return async (ctx) => {
    const own = ctx.libvirt ? await ctx.libvirt() : undefined;
    return LibvirtDriver.connect({
      name,
      allowKvm,
      uri: own?.uri ?? (ctx.env.KUBEVIRT_TS_LIBVIRT_URI || 'qemu:///system'),
      socketPath: own?.socketPath ?? (ctx.env.KUBEVIRT_TS_LIBVIRT_SOCKET || undefined),
      qemuUser: own?.qemuUser,
      converterContext: {
        paths: ctx.paths,
        backingFormats: ctx.backingFormats ?? {},
        blockVolumes: ctx.blockVolumes ?? new Set(),
      },
      render: (vmi, c) => convertVMI(vmi, { ...c, paths: withKernelBootDir(c.paths, vmi, ctx.imageRoot) }),
    });
  };
}

/** The built-in launcher drivers. */
export const launcherDriverFactories: Readonly<Record<string, LauncherDriverFactory>> = {
  libvirt: libvirt('libvirt', true),
  emulation: libvirt('emulation', false),
  fake: async () => new FakeDriver(),
};
