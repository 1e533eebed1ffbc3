/**
 * Renders the launcher Pod of a VMI in upstream virt-controller's shape
 * (pkg/virt-controller/services/template.go, renderresources.go, rendervolumes.go,
 * nodeselectorrenderer.go): one `compute` container running the launcher, restartPolicy
 * Never, labels, annotations, node selectors, resources with memory overhead and device
 * resources, emptyDirs for the sockets the node agent talks to, a seccomp profile
 * (./launcher-seccomp).
 */
import { createHash } from 'node:crypto';
import type { ClusterConfig } from '../../../api/config/cluster-config';
import type { VirtualMachineInstance } from '../../../api/generated/types';
import { LIBVIRT_LOG_FILTERS_ANNOTATION } from '../../../api/launcher-log-labels';
import {
  LAUNCHER_COMMAND,
  LAUNCHER_DIRS,
  PVC_DISK_DEFAULTS,
  renderLauncherArgs,
} from '../../common/launcher-args';
import { MULTUS_NETWORKS_ANNOTATION, multusNetworksAnnotation } from '../../common/multus';
import { controllerRef } from '../../common/owner-ref';
import type { Pod, PodContainer } from '../../common/pod';
import { launcherVerbosityEnv, vmiLauncherVerbosity } from '../../logging/launcher-verbosity';
import { libvirtDebugLogsEnv } from '../../logging/libvirt-debug-logs';
import { computeContainerPorts, computeProbe } from './compute-probes';
import { containerDiskContainers } from './container-disk-containers';
import { launcherSeccompProfile } from './launcher-seccomp';
import { isCpuDedicated, memoryOverhead } from './memory-overhead';
import { PodRenderError } from './pod-render-error';
import { launcherResources } from './pod-resources';
import { launcherVolumes } from './pod-volumes';

export { PodRenderError } from './pod-render-error';
export { DeviceResources, EPHEMERAL_STORAGE_OVERHEAD, launcherResources } from './pod-resources';
export { launcherVolumes } from './pod-volumes';

/** Labels and annotations on launcher pods (upstream values). */
export const LauncherPodLabels = {
  app: 'kubevirt.io',
  appValue: 'virt-launcher',
  createdBy: 'kubevirt.io/created-by',
  vmName: 'vm.kubevirt.io/name',
  vmiId: 'vmi.kubevirt.io/id',
} as const;
export const LauncherPodAnnotations = {
  domain: 'kubevirt.io/domain',
  defaultContainer: 'kubectl.kubernetes.io/default-container',
  migrationTransportUnix: 'kubevirt.io/migrationTransportUnix',
  evictOnly: 'descheduler.alpha.kubernetes.io/request-evict-only',
} as const;

/** Seconds added to the VMI's grace period, twice: once for the launcher, once more for the pod. */
export const GRACE_PERIOD_PADDING_SECONDS = 15;
/** Upstream's default VMI grace period when the VMI names none. */
export const DEFAULT_GRACE_PERIOD_SECONDS = 30;
/** The readiness gate virt-handler flips when the guest is paused. */
export const UNPAUSED_READINESS_GATE = 'kubevirt.io/virtual-machine-unpaused';
/** The non-root user of launchers (qemu). */
export const NON_ROOT_UID = 107;

/** Host-side choices the cluster configuration does not carry. */
export interface LauncherPodOptions {
  /** Image of the launcher container. */
  launcherImage: string;
  /**
   * Launcher driver name (`--hypervisor`, a key of the launcher's driver factories).
   * Default: `emulation` (TCG only) when the configuration's useEmulation is on, else
   * `libvirt` (domain type kvm where /dev/kvm works). Set it only for a driver of your own.
   */
  hypervisor?: string;
  /** Device resource of the hypervisor (default `kvm`, i.e. devices.kubevirt.io/kvm). */
  hypervisorDevice?: string;
  /**
   * What runs launcher pods: `local` (default; the local pod runtime, which resolves
   * containerDisk images in its image store) or `kubelet` (a container runtime: init
   * containers from each containerDisk image copy its disk into the pod,
   * container-disk-containers.ts, and the pod shares one PID namespace).
   */
  podRuntime?: 'local' | 'kubelet';
}

/** The grace period of the VMI (spec.terminationGracePeriodSeconds or 30). */
export function gracePeriodSeconds(vmi: VirtualMachineInstance): number {
  return vmi.spec.terminationGracePeriodSeconds ?? DEFAULT_GRACE_PERIOD_SECONDS;
}

/** upstream dns.SanitizeHostname: spec.hostname, else the name's first DNS label cut to 63. */
export function sanitizeHostname(vmi: VirtualMachineInstance): string {
  if (vmi.spec.hostname) return vmi.spec.hostname;
  return (vmi.metadata?.name ?? '').split('.')[0].slice(0, 63);
}

/** upstream CalculateVirtualMachineInstanceID: the name, or a 54-char prefix plus 8 hex of its SHA-1. */
export function vmiId(name: string): string {
  if (name.length <= 63) return name;
  const hash = createHash('sha1').update(name).digest('hex').slice(0, 8);
  return `${name.slice(0, 63 - 8 - 1)}-${hash}`;
}

/** upstream podLabels: the VMI's labels plus the launcher's identity labels. */
export function launcherPodLabels(vmi: VirtualMachineInstance): Record<string, string> {
  return {
    ...(vmi.metadata?.labels ?? {}),
    [LauncherPodLabels.app]: LauncherPodLabels.appValue,
    [LauncherPodLabels.createdBy]: vmi.metadata?.uid ?? '',
    [LauncherPodLabels.vmName]: sanitizeHostname(vmi),
    [LauncherPodLabels.vmiId]: vmiId(vmi.metadata?.name ?? ''),
  };
}

function launcherPodAnnotations(vmi: VirtualMachineInstance): Record<string, string> {
  const out: Record<string, string> = { [LauncherPodAnnotations.domain]: vmi.metadata?.name ?? '' };
  for (const [k, v] of Object.entries(vmi.metadata?.annotations ?? {})) {
    if (
      k.startsWith('kubectl.kubernetes.io') ||
      k.startsWith('kubevirt.io/storage-observed-api-version') ||
      k.startsWith('kubevirt.io/latest-observed-api-version')
    )
      continue;
    out[k] = v;
  }
  // Secondary networks for Multus (or local mode's pod runtime) to attach (upstream's GenerateCNIAnnotation).
  const networks = multusNetworksAnnotation(vmi);
  if (networks) out[MULTUS_NETWORKS_ANNOTATION] = networks;
  out[LauncherPodAnnotations.defaultContainer] = 'compute';
  out[LauncherPodAnnotations.migrationTransportUnix] = 'true';
  out[LauncherPodAnnotations.evictOnly] = '';
  return out;
}

/** upstream NodeSelectorRenderer.Render. */
export function launcherNodeSelector(
  vmi: VirtualMachineInstance,
  config: ClusterConfig,
): Record<string, string> {
  const sel: Record<string, string> = { 'kubevirt.io/schedulable': 'true' };
  if (vmi.spec.architecture) sel['kubernetes.io/arch'] = vmi.spec.architecture.toLowerCase();
  Object.assign(sel, config.configuration.developerConfiguration?.nodeSelectors ?? {});
  Object.assign(sel, vmi.spec.nodeSelector ?? {});
  const cpu = vmi.spec.domain.cpu;
  if (isCpuDedicated(vmi)) sel.cpumanager = 'true';
  const model = cpu?.model;
  if (model && model !== 'host-model' && model !== 'host-passthrough')
    sel[`cpu-model.node.kubevirt.io/${model}`] = 'true';
  const machine = vmi.status?.machine?.type || vmi.spec.domain.machine?.type;
  if (machine) sel[`machine-type.node.kubevirt.io/${machine}`] = 'true';
  for (const f of cpu?.features ?? []) {
    if (!f.policy || f.policy === 'require') sel[`cpu-feature.node.kubevirt.io/${f.name}`] = 'true';
  }
  if (cpu?.realtime) sel['kubevirt.io/realtime'] = 'true';
  const ls = vmi.spec.domain.launchSecurity;
  if (ls?.sev || ls?.snp) sel['kubevirt.io/sev'] = 'true';
  if (ls?.sev?.policy?.encryptedState === true) sel['kubevirt.io/sev-es'] = 'true';
  if (ls?.snp) sel['kubevirt.io/sev-snp'] = 'true';
  return sel;
}

/** The volumes `status.volumeStatus` records as block-mode claims (a migration target's pod). */
export function blockVolumesFromStatus(vmi: VirtualMachineInstance): Set<string> {
  return new Set(
    (vmi.status?.volumeStatus ?? [])
      .filter((s) => s.persistentVolumeClaimInfo?.volumeMode === 'Block')
      .map((s) => s.name),
  );
}

/**
 * Renders the launcher Pod for a VMI. Claims in `blockVolumes` become devices (default:
 * those `status.volumeStatus` says are block-mode). The VMI must be defaulted (spec.domain.resources,
 * cpu topology) and carry metadata.name, namespace and uid; anything unsafe for the
 * launcher's argv throws a field-path error.
 */
export function renderLauncherPod(
  vmi: VirtualMachineInstance,
  config: ClusterConfig,
  opts: LauncherPodOptions,
  blockVolumes: ReadonlySet<string> = blockVolumesFromStatus(vmi),
): Pod {
  const name = vmi.metadata?.name;
  const namespace = vmi.metadata?.namespace;
  const uid = vmi.metadata?.uid;
  if (!name) throw new PodRenderError('metadata.name: required to render the launcher pod');
  if (!namespace) throw new PodRenderError(`VirtualMachineInstance/${name}: metadata.namespace: required`);
  if (!uid) throw new PodRenderError(`VirtualMachineInstance/${namespace}/${name}: metadata.uid: required`);

  const grace = gracePeriodSeconds(vmi) + GRACE_PERIOD_PADDING_SECONDS;
  const killAfter = grace + GRACE_PERIOD_PADDING_SECONDS;
  const nonRoot = (vmi.status?.runtimeUser ?? 0) !== 0;
  const keepAfterFailure = Object.entries(vmi.metadata?.annotations ?? {}).some(
    ([k, v]) =>
      k.startsWith('kubevirt.io/keep-launcher-alive-after-failure') && (v === '' || v.startsWith('true')),
  );
  const overhead = memoryOverhead(vmi, {
    arch: vmi.spec.architecture || config.defaultArchitecture,
    additionalOverheadRatio: config.configuration.additionalGuestMemoryOverheadRatio,
  });
  const resources = launcherResources(vmi, config, overhead, opts);
  const { volumes, mounts, devices } = launcherVolumes(vmi, blockVolumes);

  const args = renderLauncherArgs({
    namespace,
    name,
    uid,
    gracePeriodSeconds: grace,
    shareDir: LAUNCHER_DIRS.share,
    ephemeralDiskDir: LAUNCHER_DIRS.ephemeralDisks,
    containerDiskDir: LAUNCHER_DIRS.containerDisks,
    hookSidecars: 0,
    hypervisor: opts.hypervisor ?? (config.useEmulation ? 'emulation' : 'libvirt'),
    allowEmulation: config.useEmulation,
    keepAfterFailure,
    runAsNonRoot: nonRoot,
    lessPVCSpaceToleration:
      config.configuration.developerConfiguration?.pvcTolerateLessSpaceUpToPercent ??
      PVC_DISK_DEFAULTS.lessPVCSpaceToleration,
    minimumReservePVCBytes:
      config.configuration.developerConfiguration?.minimumReservePVCBytes ??
      PVC_DISK_DEFAULTS.minimumReservePVCBytes,
    libvirtLogFilters: vmi.metadata?.annotations?.[LIBVIRT_LOG_FILTERS_ANNOTATION],
  });

  const caps = ['NET_BIND_SERVICE'];
  if (isCpuDedicated(vmi) || vmi.spec.domain.cpu?.realtime) caps.push('SYS_NICE');
  const compute: PodContainer = {
    name: 'compute',
    image: opts.launcherImage,
    imagePullPolicy: config.configuration.imagePullPolicy ?? 'IfNotPresent',
    command: [LAUNCHER_COMMAND],
    args,
    env: [
      { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
      ...launcherVerbosityEnv(config, vmi),
      ...libvirtDebugLogsEnv(vmi, vmiLauncherVerbosity(config, vmi)),
    ],
    resources,
    ports: computeContainerPorts(vmi),
    readinessProbe: computeProbe(vmi, vmi.spec.readinessProbe),
    livenessProbe: computeProbe(vmi, vmi.spec.livenessProbe),
    volumeMounts: mounts,
    ...(devices.length ? { volumeDevices: devices } : {}),
    securityContext: nonRoot
      ? {
          runAsUser: NON_ROOT_UID,
          runAsNonRoot: true,
          privileged: false,
          capabilities: { add: ['NET_BIND_SERVICE'], drop: ['ALL'] },
        }
      : { runAsUser: 0, privileged: false, capabilities: { add: caps, drop: ['NET_RAW'] } },
  };

  // Only a kubelet runs containerDisk images as containers; the local pod runtime links
  // the disk from its image store (volume-prep.ts).
  const disks =
    opts.podRuntime === 'kubelet'
      ? containerDiskContainers(vmi, compute.imagePullPolicy ?? 'IfNotPresent', {
          runAsUser: NON_ROOT_UID,
          runAsNonRoot: true,
          privileged: false,
          capabilities: { drop: ['ALL'] },
        })
      : { containers: [] };
  if (disks.compute) {
    compute.volumeMounts = [...(compute.volumeMounts ?? []), ...disks.compute.volumeMounts];
    compute.lifecycle = disks.compute.lifecycle;
  }
  const spec = vmi.spec;
  const pod: Pod = {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      generateName: `virt-launcher-${name}-`,
      namespace,
      labels: launcherPodLabels(vmi),
      annotations: launcherPodAnnotations(vmi),
      ownerReferences: [controllerRef('kubevirt.io/v1', 'VirtualMachineInstance', vmi)],
    },
    spec: {
      hostname: sanitizeHostname(vmi),
      subdomain: spec.subdomain,
      securityContext: {
        ...(nonRoot
          ? { fsGroup: NON_ROOT_UID, runAsUser: NON_ROOT_UID, runAsGroup: NON_ROOT_UID, runAsNonRoot: true }
          : { fsGroup: NON_ROOT_UID, runAsUser: 0 }),
        seccompProfile: launcherSeccompProfile(config),
      },
      terminationGracePeriodSeconds: killAfter,
      restartPolicy: 'Never',
      // libvirt daemonizes QEMU (its capability probes too), so QEMU is reparented to PID 1;
      // in a container that would be the launcher (Node, which reaps no orphans), and the
      // daemon waits forever on the zombies. Upstream's virt-launcher-monitor is PID 1 for
      // that; here the pod shares one PID namespace and the pause container, PID 1, reaps.
      shareProcessNamespace: opts.podRuntime === 'kubelet' ? true : undefined,
      containers: [compute, ...disks.containers],
      nodeSelector: launcherNodeSelector(vmi, config),
      volumes,
      dnsConfig: spec.dnsConfig,
      dnsPolicy: spec.dnsPolicy,
      readinessGates: [{ conditionType: UNPAUSED_READINESS_GATE }],
      enableServiceLinks: false,
      schedulerName: spec.schedulerName,
      tolerations: spec.tolerations,
      topologySpreadConstraints: spec.topologySpreadConstraints,
      priorityClassName: spec.priorityClassName,
      affinity: hostModelAffinity(vmi),
      automountServiceAccountToken: (spec.volumes ?? []).some((v) => v.serviceAccount !== undefined),
    },
  };
  const sa = spec.volumes?.find((v) => v.serviceAccount)?.serviceAccount?.serviceAccountName;
  if (sa) pod.spec!.serviceAccountName = sa;
  return stripUndefined(pod);
}

/** host-model CPUs must avoid nodes whose host model is obsolete (upstream setNodeAffinityForHostModelCpuModel). */
function hostModelAffinity(vmi: VirtualMachineInstance): unknown {
  const base = vmi.spec.affinity ? structuredClone(vmi.spec.affinity) : undefined;
  const model = vmi.spec.domain.cpu?.model;
  if (model && model !== 'host-model') return base;
  const requirement = { key: 'node-labeller.kubevirt.io/obsolete-host-model', operator: 'DoesNotExist' };
  const affinity = (base ?? {}) as {
    nodeAffinity?: {
      requiredDuringSchedulingIgnoredDuringExecution?: {
        nodeSelectorTerms: Array<{ matchExpressions?: unknown[] }>;
      };
    };
  };
  const required = affinity.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution;
  if (required?.nodeSelectorTerms?.length) {
    for (const term of required.nodeSelectorTerms)
      term.matchExpressions = [...(term.matchExpressions ?? []), requirement];
  } else {
    affinity.nodeAffinity = {
      ...(affinity.nodeAffinity ?? {}),
      requiredDuringSchedulingIgnoredDuringExecution: {
        nodeSelectorTerms: [{ matchExpressions: [requirement] }],
      },
    };
  }
  return affinity;
}

function stripUndefined<T>(v: T): T {
  if (Array.isArray(v)) return v.map(stripUndefined) as T;
  if (v && typeof v === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, x] of Object.entries(v)) if (x !== undefined) out[k] = stripUndefined(x);
    return out as T;
  }
  return v;
}
