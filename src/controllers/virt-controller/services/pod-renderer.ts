/**
 * Renders the launcher Pod of a VMI in upstream virt-controller's shape
 * (pkg/virt-controller/services/template.go, renderresources.go, rendervolumes.go,
 * nodeselectorrenderer.go): one `compute` container running the launcher, restartPolicy
 * Never, labels, annotations, node selectors, resources with memory overhead and device
 * resources, emptyDirs for the sockets the node agent talks to.
 */
import { createHash } from 'node:crypto';
import type { ClusterConfig } from '../../../api/config/cluster-config';
import type { VirtualMachineInstance } from '../../../api/generated/types';
import { LAUNCHER_COMMAND, LAUNCHER_DIRS, renderLauncherArgs } from '../../shared/launcher-args';
import type { Pod, PodContainer, PodVolume, ResourceList } from '../../shared/pod';
import {
  formatBytes,
  formatMilliCPU,
  parseQuantity,
  quantityMilliValue,
  quantityValue,
} from '../../shared/quantity';
import { hasTpm, isCpuDedicated, isSev, memoryOverhead, vcpuCount } from './memory-overhead';
import { controllerRef } from './owner-ref';

/** Device-plugin resources the launcher may request (upstream names). */
export const DeviceResources = {
  kvm: 'devices.kubevirt.io/kvm',
  tun: 'devices.kubevirt.io/tun',
  vhostNet: 'devices.kubevirt.io/vhost-net',
  vhostVsock: 'devices.kubevirt.io/vhost-vsock',
  sev: 'devices.kubevirt.io/sev',
} as const;

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
/** Ephemeral storage requested on top of the user's (upstream's ephemeralStorageOverheadSize). */
export const EPHEMERAL_STORAGE_OVERHEAD = '50M';
/** The readiness gate virt-handler flips when the guest is paused. */
export const UNPAUSED_READINESS_GATE = 'kubevirt.io/virtual-machine-unpaused';
/** The non-root user of launchers (qemu). */
export const NON_ROOT_UID = 107;

/** Host-side choices the cluster configuration does not carry. */
export interface LauncherPodOptions {
  /** Image of the launcher container. */
  launcherImage: string;
  /** Hypervisor driver the launcher selects (default `libvirt`). */
  hypervisor?: string;
  /** Device resource of the hypervisor (default `kvm`, i.e. devices.kubevirt.io/kvm). */
  hypervisorDevice?: string;
}

/** Thrown when a VMI cannot be rendered into a pod; the message names the field. */
export class PodRenderError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'PodRenderError';
  }
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

function requiresTun(vmi: VirtualMachineInstance): boolean {
  const d = vmi.spec.domain.devices;
  return (d.interfaces?.length ?? 0) > 0 || d.autoattachPodInterface !== false;
}

function wantsVirtioNet(vmi: VirtualMachineInstance): boolean {
  return (vmi.spec.domain.devices.interfaces ?? []).some(
    (i) => !i.sriov && (!i.model || i.model === 'virtio'),
  );
}

function q(value: string | number | undefined, field: string) {
  return value === undefined ? undefined : parseQuantity(value, field);
}

function addBytes(list: ResourceList, key: string, bytes: bigint): void {
  list[key] = formatBytes(bytes);
}

function bump(list: ResourceList, key: string): void {
  list[key] = String(Number(list[key] ?? '0') + 1);
}

/**
 * The compute container's resources, by upstream's ResourceRenderer rules in its order:
 * ephemeral storage, device resources, memory request from guest (with overcommit), CPU
 * pinning or CPU request by cpuAllocationRatio, hugepages or memory overhead, GPUs and
 * host devices, SEV.
 */
export function launcherResources(
  vmi: VirtualMachineInstance,
  config: ClusterConfig,
  overhead: bigint,
  opts: Pick<LauncherPodOptions, 'hypervisorDevice'> = {},
): { requests: ResourceList; limits: ResourceList } {
  const base = 'spec.domain.resources';
  const userReq = { ...(vmi.spec.domain.resources?.requests ?? {}) };
  const userLim = { ...(vmi.spec.domain.resources?.limits ?? {}) };
  // Work in exact numbers; stringify at the end.
  const req: Record<string, string> = {};
  const lim: Record<string, string> = {};
  const calcReq: Record<string, string> = {};
  const calcLim: Record<string, string> = {};
  for (const [k, v] of Object.entries(userReq)) req[k] = String(v);
  for (const [k, v] of Object.entries(userLim)) lim[k] = String(v);

  // WithEphemeralStorageRequest
  const eph = parseQuantity(EPHEMERAL_STORAGE_OVERHEAD);
  const ephReq = quantityValue(q(req['ephemeral-storage'] ?? 0, `${base}.requests.ephemeral-storage`)!);
  req['ephemeral-storage'] = (ephReq + quantityValue(eph)).toString();
  if (lim['ephemeral-storage'] !== undefined) {
    const v = quantityValue(q(lim['ephemeral-storage'], `${base}.limits.ephemeral-storage`)!);
    lim['ephemeral-storage'] = (v + quantityValue(eph)).toString();
  }

  // WithVirtualizationResources (into limits; the scheduler copies them to requests)
  const allowEmulation = config.useEmulation;
  if (requiresTun(vmi)) lim[DeviceResources.tun] = '1';
  if (wantsVirtioNet(vmi) && !allowEmulation) lim[DeviceResources.vhostNet] = '1';
  if (!allowEmulation) lim[`devices.kubevirt.io/${opts.hypervisorDevice ?? 'kvm'}`] = '1';
  if (vmi.spec.domain.devices.autoattachVSOCK === true) lim[DeviceResources.vhostVsock] = '1';

  const memory = vmi.spec.domain.memory;
  const hugepages = memory?.hugepages !== undefined;
  const dedicated = isCpuDedicated(vmi);

  // WithMemoryRequests (only when the memory request is empty)
  if (isZeroQ(req.memory)) {
    if (!isZeroQ(lim.memory)) {
      req.memory = lim.memory;
    } else {
      let mem: bigint | undefined;
      if (memory?.guest !== undefined)
        mem = quantityValue(parseQuantity(memory.guest, 'spec.domain.memory.guest'));
      else if (memory?.hugepages?.pageSize) {
        try {
          mem = quantityValue(parseQuantity(memory.hugepages.pageSize));
        } catch {
          mem = undefined;
        }
      }
      if (mem !== undefined && mem > 0n) {
        const overcommit = config.memoryOvercommit;
        req.memory = (
          overcommit === 100 || hugepages || dedicated ? mem : (mem * 100n) / BigInt(overcommit)
        ).toString();
      }
    }
  }

  const ioThreads = BigInt(vmi.spec.domain.ioThreads?.supplementalPoolThreadCount ?? 0);
  if (dedicated) {
    // WithCPUPinning
    const vcpus = BigInt(vcpuCount(vmi.spec.domain.cpu));
    if (vcpus !== 0n) {
      lim.cpu = (vcpus + ioThreads).toString();
      req.cpu = (vcpus + ioThreads).toString();
    } else {
      if (lim.cpu !== undefined)
        lim.cpu = formatMilliCPU(quantityMilliValue(parseQuantity(lim.cpu)) + ioThreads * 1000n);
      if (req.cpu !== undefined)
        req.cpu = formatMilliCPU(quantityMilliValue(parseQuantity(req.cpu)) + ioThreads * 1000n);
    }
    if (vmi.spec.domain.cpu?.isolateEmulatorThread) {
      const parity =
        vmi.metadata?.annotations?.['alpha.kubevirt.io/EmulatorThreadCompleteToEvenParity'] !== undefined;
      const limMilli = quantityMilliValue(parseQuantity(lim.cpu ?? 0));
      const emulator = parity && (limMilli / 1000n + ioThreads) % 2n === 0n ? 2n : 1n;
      lim.cpu = formatMilliCPU(limMilli + emulator * 1000n);
      if (req.cpu !== undefined)
        req.cpu = formatMilliCPU(quantityMilliValue(parseQuantity(req.cpu)) + emulator * 1000n);
    }
    if (req.memory !== undefined) lim.memory = req.memory;
  } else {
    // WithoutDedicatedCPU: calculated request = (vCPUs + IO threads) / cpuAllocationRatio
    const cpu = vmi.spec.domain.cpu;
    const vcpus = BigInt(cpu ? vcpuCount(cpu) : 1);
    const total = vcpus + ioThreads;
    const ratio = BigInt(config.cpuAllocationRatio);
    if (total !== 0n && ratio > 0n) {
      // %g of total/ratio, then MustParse: millicores rounded up.
      calcReq.cpu = formatMilliCPU((total * 1000n + ratio - 1n) / ratio);
    }
  }

  if (hugepages) {
    // WithHugePages
    const pageSize = memory?.hugepages?.pageSize ?? '';
    const reqMem = quantityValue(parseQuantity(req.memory ?? 0, `${base}.requests.memory`));
    const limMem = quantityValue(parseQuantity(lim.memory ?? 0, `${base}.limits.memory`));
    const guest =
      memory?.guest !== undefined
        ? quantityValue(parseQuantity(memory.guest, 'spec.domain.memory.guest'))
        : undefined;
    const hp = guest !== undefined && reqMem > guest ? guest : reqMem;
    addBytes(calcReq, `hugepages-${pageSize}`, hp);
    addBytes(calcLim, `hugepages-${pageSize}`, hp);
    let reqDiff = 0n;
    let limDiff = 0n;
    if (guest !== undefined) {
      if (reqMem > guest) reqDiff = reqMem - guest;
      if (limMem > guest) limDiff = limMem - guest;
    }
    addBytes(req, 'memory', reqDiff + overhead);
    if (lim.memory !== undefined) addBytes(lim, 'memory', limDiff + overhead);
  } else {
    // WithMemoryOverhead
    const reqMem = quantityValue(parseQuantity(req.memory ?? 0, `${base}.requests.memory`));
    addBytes(req, 'memory', vmi.spec.domain.resources?.overcommitGuestOverhead ? reqMem : reqMem + overhead);
    if (lim.memory !== undefined) {
      addBytes(lim, 'memory', quantityValue(parseQuantity(lim.memory, `${base}.limits.memory`)) + overhead);
    }
  }

  // GPUs and host devices managed by device plugins: one unit each, in requests and limits.
  for (const dev of [
    ...(vmi.spec.domain.devices.gpus ?? []),
    ...(vmi.spec.domain.devices.hostDevices ?? []),
  ]) {
    if (dev.deviceName && !dev.claimName) {
      bump(calcReq, dev.deviceName);
      bump(calcLim, dev.deviceName);
    }
  }
  if (isSev(vmi)) {
    bump(calcReq, DeviceResources.sev);
    bump(calcLim, DeviceResources.sev);
  }

  // Requests() / Limits(): calculated first, the VM's own values on top.
  const requests: ResourceList = { ...calcReq, ...req };
  const limits: ResourceList = { ...calcLim, ...lim };
  requests['ephemeral-storage'] = formatDecimal(requests['ephemeral-storage']);
  if (limits['ephemeral-storage'] !== undefined)
    limits['ephemeral-storage'] = formatDecimal(limits['ephemeral-storage']);
  return { requests, limits };
}

function isZeroQ(v: string | number | undefined): boolean {
  return v === undefined || parseQuantity(v).num === 0n;
}

function formatDecimal(bytes: string): string {
  const v = BigInt(bytes);
  if (v !== 0n && v % 1000000n === 0n) return `${v / 1000000n}M`;
  return v.toString();
}

/** Why a hostDisk path cannot become a hostPath volume (absolute, no "." or "..", no control characters, not a directory), or undefined. */
export function hostDiskPathProblem(path: string): string | undefined {
  if (!path) return 'is required';
  if (!path.startsWith('/')) return 'must be an absolute path';
  for (const ch of path) {
    const c = ch.charCodeAt(0);
    if (c < 0x20 || c === 0x7f) return 'must not contain control characters';
  }
  const parts = path.split('/');
  if (parts.some((p) => p === '..' || p === '.')) return 'must not contain "." or ".." segments';
  if (path.endsWith('/')) return 'must name a file, not a directory';
  return undefined;
}

/** upstream VolumeRenderer: the launcher's shared emptyDirs plus the VMI's PVCs and config volumes. */
export function launcherVolumes(vmi: VirtualMachineInstance): {
  volumes: PodVolume[];
  mounts: NonNullable<PodContainer['volumeMounts']>;
} {
  const volumes: PodVolume[] = [
    { name: 'private', emptyDir: {} },
    { name: 'public', emptyDir: {} },
    { name: 'sockets', emptyDir: {} },
    { name: 'virt-bin-share-dir', emptyDir: {} },
    { name: 'libvirt-runtime', emptyDir: {} },
    { name: 'ephemeral-disks', emptyDir: {} },
    { name: 'container-disks', emptyDir: {} },
  ];
  const mounts: NonNullable<PodContainer['volumeMounts']> = [
    { name: 'private', mountPath: LAUNCHER_DIRS.private },
    { name: 'public', mountPath: LAUNCHER_DIRS.share },
    { name: 'ephemeral-disks', mountPath: LAUNCHER_DIRS.ephemeralDisks },
    { name: 'container-disks', mountPath: LAUNCHER_DIRS.containerDisks, mountPropagation: 'HostToContainer' },
    { name: 'libvirt-runtime', mountPath: LAUNCHER_DIRS.libvirtRuntime },
    { name: 'sockets', mountPath: `${LAUNCHER_DIRS.share}/sockets` },
  ];
  if (!vmi.spec.domain.devices.disableHotplug) {
    volumes.push({ name: 'hotplug-disks', emptyDir: {} });
    mounts.push({
      name: 'hotplug-disks',
      mountPath: LAUNCHER_DIRS.hotplugDisks,
      mountPropagation: 'HostToContainer',
    });
  }
  if (hasTpm(vmi)) {
    // swtpm state lives in the private dir; nothing extra to mount for a non-persistent TPM.
  }
  // Config volumes get a pod volume always and a mount only when a disk uses them (upstream withVMIConfigVolumes).
  const diskNames = new Set((vmi.spec.domain.devices.disks ?? []).map((d) => d.name));
  const configMount = (name: string, dir: string) => {
    if (diskNames.has(name))
      mounts.push({ name, mountPath: `${LAUNCHER_DIRS.private}/${dir}/${name}`, readOnly: true });
  };
  // cloud-init secretRefs: the secret's keys mounted one by one (subPath) where the launcher reads them.
  const cloudInitSecret = (vol: string, suffix: string, secretName: string, keys: string[]) => {
    const name = `${vol}-${suffix}`;
    volumes.push({ name, secret: { secretName } });
    for (const key of keys)
      mounts.push({
        name,
        mountPath: `${LAUNCHER_DIRS.private}/secret/${vol}/${key}`,
        subPath: key,
        readOnly: true,
      });
  };
  (vmi.spec.volumes ?? []).forEach((v, i) => {
    const field = `spec.volumes[${i}]`;
    const claim = v.persistentVolumeClaim?.claimName ?? v.dataVolume?.name;
    if (claim !== undefined) {
      if (v.persistentVolumeClaim?.hotpluggable || v.dataVolume?.hotpluggable) return;
      volumes.push({
        name: v.name,
        persistentVolumeClaim: { claimName: claim, readOnly: v.persistentVolumeClaim?.readOnly },
      });
      mounts.push({ name: v.name, mountPath: `${LAUNCHER_DIRS.private}/vmi-disks/${v.name}` });
    } else if (v.configMap) {
      volumes.push({
        name: v.name,
        configMap: { name: v.configMap.name ?? '', optional: v.configMap.optional },
      });
      configMount(v.name, 'config-map');
    } else if (v.secret) {
      volumes.push({
        name: v.name,
        secret: { secretName: v.secret.secretName ?? '', optional: v.secret.optional },
      });
      configMount(v.name, 'secret');
    } else if (v.downwardAPI) {
      volumes.push({
        name: v.name,
        downwardAPI: {
          items: (v.downwardAPI.fields ?? []) as NonNullable<PodVolume['downwardAPI']>['items'],
        },
      });
      configMount(v.name, 'downwardapi');
    } else if (v.sysprep) {
      const src = v.sysprep;
      if (!src.configMap?.name && !src.secret?.name)
        throw new PodRenderError(`${field}.sysprep: needs a configMap or a secret`);
      volumes.push(
        src.configMap?.name
          ? { name: v.name, configMap: { name: src.configMap.name } }
          : { name: v.name, secret: { secretName: src.secret?.name ?? '' } },
      );
      mounts.push({ name: v.name, mountPath: `${LAUNCHER_DIRS.private}/sysprep/${v.name}`, readOnly: true });
    } else if (v.cloudInitNoCloud || v.cloudInitConfigDrive) {
      const src = v.cloudInitNoCloud ?? v.cloudInitConfigDrive!;
      if (src.secretRef?.name) cloudInitSecret(v.name, 'udata', src.secretRef.name, ['userdata', 'userData']);
      if (src.networkDataSecretRef?.name)
        cloudInitSecret(v.name, 'ndata', src.networkDataSecretRef.name, ['networkdata', 'networkData']);
    } else if (v.hostDisk) {
      const path = v.hostDisk.path;
      const problem = hostDiskPathProblem(path);
      if (problem) throw new PodRenderError(`${field}.hostDisk.path: ${JSON.stringify(path)} ${problem}`);
      const dir = path.slice(0, path.lastIndexOf('/')) || '/';
      volumes.push({
        name: v.name,
        hostPath: { path: dir, type: v.hostDisk.type === 'DiskOrCreate' ? 'DirectoryOrCreate' : 'Directory' },
      });
      mounts.push({ name: v.name, mountPath: `${LAUNCHER_DIRS.private}/vmi-disks/${v.name}` });
    } else if (v.downwardMetrics) {
      volumes.push({ name: v.name, emptyDir: { medium: 'Memory', sizeLimit: '1Mi' } });
      mounts.push({ name: v.name, mountPath: `${LAUNCHER_DIRS.share}/downwardmetrics-disk` });
    }
  });
  return { volumes, mounts };
}

/**
 * Renders the launcher Pod for a VMI. The VMI must be defaulted (spec.domain.resources,
 * cpu topology) and carry metadata.name, namespace and uid; anything unsafe for the
 * launcher's argv throws a field-path error.
 */
export function renderLauncherPod(
  vmi: VirtualMachineInstance,
  config: ClusterConfig,
  opts: LauncherPodOptions,
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
  const { volumes, mounts } = launcherVolumes(vmi);

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
  });

  const caps = ['NET_BIND_SERVICE'];
  if (isCpuDedicated(vmi) || vmi.spec.domain.cpu?.realtime) caps.push('SYS_NICE');
  const compute: PodContainer = {
    name: 'compute',
    image: opts.launcherImage,
    imagePullPolicy: config.configuration.imagePullPolicy ?? 'IfNotPresent',
    command: [LAUNCHER_COMMAND],
    args,
    env: [{ name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
    resources,
    volumeMounts: mounts,
    securityContext: nonRoot
      ? {
          runAsUser: NON_ROOT_UID,
          runAsNonRoot: true,
          privileged: false,
          capabilities: { add: ['NET_BIND_SERVICE'], drop: ['ALL'] },
        }
      : { runAsUser: 0, privileged: false, capabilities: { add: caps, drop: ['NET_RAW'] } },
  };

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
      securityContext: nonRoot
        ? { fsGroup: NON_ROOT_UID, runAsUser: NON_ROOT_UID, runAsGroup: NON_ROOT_UID, runAsNonRoot: true }
        : { fsGroup: NON_ROOT_UID, runAsUser: 0 },
      terminationGracePeriodSeconds: killAfter,
      restartPolicy: 'Never',
      containers: [compute],
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
