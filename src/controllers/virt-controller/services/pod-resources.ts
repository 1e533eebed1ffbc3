import type { ClusterConfig } from '../../../api/config/cluster-config';
import type { VirtualMachineInstance } from '../../../api/generated/types';
import type { ResourceList } from '../../common/pod';
import {
  formatBytes,
  formatMilliCPU,
  parseQuantity,
  quantityMilliValue,
  quantityValue,
} from '../../common/quantity';
import { isCpuDedicated, isSev, vcpuCount } from './memory-overhead';
import type { LauncherPodOptions } from './pod-renderer';

/** Ephemeral storage requested on top of the user's (upstream's ephemeralStorageOverheadSize). */
export const EPHEMERAL_STORAGE_OVERHEAD = '50M';

/** Device-plugin resources the launcher may request (upstream names). */
export const DeviceResources = {
  kvm: 'devices.kubevirt.io/kvm',
  tun: 'devices.kubevirt.io/tun',
  vhostNet: 'devices.kubevirt.io/vhost-net',
  vhostVsock: 'devices.kubevirt.io/vhost-vsock',
  sev: 'devices.kubevirt.io/sev',
} as const;

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
