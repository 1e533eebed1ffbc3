/**
 * The launcher's command-line contract: what the VMI controller puts in the launcher
 * Pod's `compute` container and what `kubevirt-ts virt-launcher` parses. Both sides
 * import this module, so the flags cannot drift apart. See docs/controllers.md.
 */
import { LIBVIRT_LOG_FILTERS_ANNOTATION, libvirtLogFiltersProblem } from '../../api/launcher-log-labels';

/** The binary the compute container runs. */
export const LAUNCHER_COMMAND = 'kubevirt-ts';
/** The subcommand of {@link LAUNCHER_COMMAND} that runs a launcher. */
export const LAUNCHER_SUBCOMMAND = 'virt-launcher';

/** Directories shared between the launcher and the node agent, as upstream lays them out. */
export const LAUNCHER_DIRS = {
  /** emptyDir `public`: the VMI's unix sockets the handler connects to (`sockets/`). */
  share: '/var/run/kubevirt',
  /** emptyDir `private`: launcher-only state (config-volume ISOs, mounted PVCs). */
  private: '/var/run/kubevirt-private',
  /** emptyDir `ephemeral-disks`: copy-on-write overlays of containerDisks and emptyDisks. */
  ephemeralDisks: '/var/run/kubevirt-ephemeral-disks',
  /** emptyDir `container-disks`: where containerDisk images appear. */
  containerDisks: '/var/run/kubevirt/container-disks',
  /** emptyDir `hotplug-disks`: hotplugged volumes. */
  hotplugDisks: '/var/run/kubevirt/hotplug-disks',
  /** emptyDir `libvirt-runtime`: the per-VM libvirt daemon's runtime dir. */
  libvirtRuntime: '/var/run/libvirt',
} as const;

/** Everything the launcher needs from its command line. */
export interface LauncherArgs {
  /** The VMI's namespace (a DNS-1123 label). */
  namespace: string;
  /** The VMI's name (a DNS-1123 subdomain). */
  name: string;
  /** The VMI's metadata.uid. */
  uid: string;
  /** Seconds the launcher gives the guest to shut down: the VMI's grace plus a 15 s pad. */
  gracePeriodSeconds: number;
  /** Shared directory (sockets for the node agent). */
  shareDir: string;
  ephemeralDiskDir: string;
  containerDiskDir: string;
  /** Number of hook sidecars to wait for. */
  hookSidecars: number;
  /** Hypervisor driver name the launcher should select (`libvirt`, `emulation`, `fake`, ...). */
  hypervisor: string;
  /** Software emulation allowed (developerConfiguration.useEmulation). */
  allowEmulation: boolean;
  /** Keep the launcher running after the guest fails (annotation kubevirt.io/keep-launcher-alive-after-failure). */
  keepAfterFailure: boolean;
  /** Run as the non-root user 107. */
  runAsNonRoot: boolean;
  /**
   * Percent less room than a filesystem claim asks for that its new disk.img still
   * accepts (developerConfiguration.pvcTolerateLessSpaceUpToPercent, default 10).
   */
  lessPVCSpaceToleration?: number;
  /** Bytes left free on a claim's filesystem (developerConfiguration.minimumReservePVCBytes, default 131072). */
  minimumReservePVCBytes?: number;
  /** libvirt log filters of the VMI's `kubevirt.io/libvirt-log-filters` annotation (upstream's `--libvirt-log-filters`). */
  libvirtLogFilters?: string;
}

/** upstream's defaults of the two PVC disk settings (rendered only when a cluster changes them). */
export const PVC_DISK_DEFAULTS = { lessPVCSpaceToleration: 10, minimumReservePVCBytes: 131072 } as const;

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const UID = /^[A-Za-z0-9][A-Za-z0-9-]{0,62}$/;
const ABS_PATH = /^\/[A-Za-z0-9._/-]*$/;
const DRIVER = /^[a-z0-9][a-z0-9-]{0,62}$/;

/** Thrown for a value that may not reach the launcher's argv; names the field. */
export class LauncherArgsError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'LauncherArgsError';
  }
}

function check(ok: boolean, field: string, value: unknown, what: string): void {
  if (!ok) throw new LauncherArgsError(`${field}: ${JSON.stringify(value)} is not ${what}`);
}

/** Rejects any value that is not safe and valid as a launcher argument. */
export function validateLauncherArgs(a: LauncherArgs): void {
  check(
    a.namespace.length <= 63 && DNS1123_LABEL.test(a.namespace),
    'metadata.namespace',
    a.namespace,
    'a DNS-1123 label',
  );
  check(
    a.name.length <= 253 && DNS1123_SUBDOMAIN.test(a.name),
    'metadata.name',
    a.name,
    'a DNS-1123 subdomain',
  );
  check(UID.test(a.uid), 'metadata.uid', a.uid, 'a UID');
  check(
    Number.isSafeInteger(a.gracePeriodSeconds) && a.gracePeriodSeconds >= 0,
    'gracePeriodSeconds',
    a.gracePeriodSeconds,
    'a non-negative integer',
  );
  check(
    Number.isSafeInteger(a.hookSidecars) && a.hookSidecars >= 0,
    'hookSidecars',
    a.hookSidecars,
    'a non-negative integer',
  );
  for (const [field, v] of [
    ['shareDir', a.shareDir],
    ['ephemeralDiskDir', a.ephemeralDiskDir],
    ['containerDiskDir', a.containerDiskDir],
  ] as const) {
    check(ABS_PATH.test(v) && !v.split('/').includes('..'), field, v, 'an absolute path without ".."');
  }
  check(DRIVER.test(a.hypervisor), 'hypervisor', a.hypervisor, 'a driver name');
  const tol = a.lessPVCSpaceToleration ?? PVC_DISK_DEFAULTS.lessPVCSpaceToleration;
  const reserve = a.minimumReservePVCBytes ?? PVC_DISK_DEFAULTS.minimumReservePVCBytes;
  check(
    Number.isInteger(tol) && tol >= 0 && tol <= 100,
    'developerConfiguration.pvcTolerateLessSpaceUpToPercent',
    tol,
    'a whole percentage (0-100)',
  );
  check(
    Number.isSafeInteger(reserve) && reserve >= 0,
    'developerConfiguration.minimumReservePVCBytes',
    reserve,
    'a non-negative integer',
  );
  if (a.libvirtLogFilters !== undefined) {
    const problem = libvirtLogFiltersProblem(a.libvirtLogFilters);
    check(
      !problem,
      `metadata.annotations[${LIBVIRT_LOG_FILTERS_ANNOTATION}]`,
      a.libvirtLogFilters,
      'libvirt log filters',
    );
  }
}

/** The compute container's args (after the command), in upstream's flag spelling. */
export function renderLauncherArgs(a: LauncherArgs): string[] {
  validateLauncherArgs(a);
  const args = [
    LAUNCHER_SUBCOMMAND,
    '--namespace',
    a.namespace,
    '--name',
    a.name,
    '--uid',
    a.uid,
    '--grace-period-seconds',
    String(a.gracePeriodSeconds),
    '--kubevirt-share-dir',
    a.shareDir,
    '--ephemeral-disk-dir',
    a.ephemeralDiskDir,
    '--container-disk-dir',
    a.containerDiskDir,
    '--hook-sidecars',
    String(a.hookSidecars),
    '--hypervisor',
    a.hypervisor,
  ];
  if (a.runAsNonRoot) args.push('--run-as-nonroot');
  if (a.allowEmulation) args.push('--allow-emulation');
  if (a.keepAfterFailure) args.push('--keep-after-failure');
  if (
    a.lessPVCSpaceToleration !== undefined &&
    a.lessPVCSpaceToleration !== PVC_DISK_DEFAULTS.lessPVCSpaceToleration
  )
    args.push('--less-pvc-space-toleration', String(a.lessPVCSpaceToleration));
  if (
    a.minimumReservePVCBytes !== undefined &&
    a.minimumReservePVCBytes !== PVC_DISK_DEFAULTS.minimumReservePVCBytes
  )
    args.push('--minimum-pvc-reserve-bytes', String(a.minimumReservePVCBytes));
  if (a.libvirtLogFilters !== undefined) args.push('--libvirt-log-filters', a.libvirtLogFilters);
  return args;
}

const VALUE_FLAGS: Record<string, keyof LauncherArgs> = {
  '--namespace': 'namespace',
  '--name': 'name',
  '--uid': 'uid',
  '--grace-period-seconds': 'gracePeriodSeconds',
  '--kubevirt-share-dir': 'shareDir',
  '--ephemeral-disk-dir': 'ephemeralDiskDir',
  '--container-disk-dir': 'containerDiskDir',
  '--hook-sidecars': 'hookSidecars',
  '--hypervisor': 'hypervisor',
  '--less-pvc-space-toleration': 'lessPVCSpaceToleration',
  '--minimum-pvc-reserve-bytes': 'minimumReservePVCBytes',
  '--libvirt-log-filters': 'libvirtLogFilters',
};
const NUMBER_FLAGS = new Set<keyof LauncherArgs>([
  'gracePeriodSeconds',
  'hookSidecars',
  'lessPVCSpaceToleration',
  'minimumReservePVCBytes',
]);
const BOOL_FLAGS: Record<string, keyof LauncherArgs> = {
  '--run-as-nonroot': 'runAsNonRoot',
  '--allow-emulation': 'allowEmulation',
  '--keep-after-failure': 'keepAfterFailure',
};

/**
 * Parses the args after `virt-launcher` (the subcommand itself may be included or not).
 * Unknown flags and missing required ones are errors naming the flag.
 */
export function parseLauncherArgs(argv: readonly string[]): LauncherArgs {
  const out: Partial<Record<keyof LauncherArgs, string | number | boolean>> = {
    shareDir: LAUNCHER_DIRS.share,
    ephemeralDiskDir: LAUNCHER_DIRS.ephemeralDisks,
    containerDiskDir: LAUNCHER_DIRS.containerDisks,
    hookSidecars: 0,
    hypervisor: 'libvirt',
    allowEmulation: false,
    keepAfterFailure: false,
    runAsNonRoot: false,
    ...PVC_DISK_DEFAULTS,
  };
  const args = argv[0] === LAUNCHER_SUBCOMMAND ? argv.slice(1) : argv;
  for (let i = 0; i < args.length; i++) {
    const flag = args[i];
    if (flag in BOOL_FLAGS) {
      out[BOOL_FLAGS[flag]] = true;
      continue;
    }
    const key = VALUE_FLAGS[flag];
    if (!key) throw new LauncherArgsError(`virt-launcher: unknown flag ${JSON.stringify(flag)}`);
    const value = args[++i];
    if (value === undefined) throw new LauncherArgsError(`virt-launcher: ${flag} needs a value`);
    out[key] = NUMBER_FLAGS.has(key) ? Number(value) : value;
  }
  for (const required of ['namespace', 'name', 'uid', 'gracePeriodSeconds'] as const) {
    if (out[required] === undefined) {
      const flag = Object.keys(VALUE_FLAGS).find((f) => VALUE_FLAGS[f] === required);
      throw new LauncherArgsError(`virt-launcher: ${flag} is required`);
    }
  }
  const parsed = out as unknown as LauncherArgs;
  validateLauncherArgs(parsed);
  return parsed;
}
