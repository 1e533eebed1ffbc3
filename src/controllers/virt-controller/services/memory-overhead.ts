/**
 * The launcher pod's memory overhead: what virt-launcher, virtqemud, virtlogd and QEMU
 * use beyond the guest's RAM. Byte-for-byte the formula of upstream KubeVirt's KVM
 * backend (`pkg/hypervisor/kvm/hypervisorbackend.go`, GetMemoryOverhead, commit
 * 03ede70a), so a pod we render requests exactly what upstream's would.
 */
import { bytesOf, parseQuantity, quantityScaledValue, quantityValue } from '../../common/quantity';

const Mi = 1n << 20n;
const Gi = 1n << 30n;

/** Upstream's fixed per-process shares (the `ps` RSS of each, rounded up to a MiB). */
export const FIXED_OVERHEAD = {
  virtLauncherMonitor: 25n * Mi,
  virtLauncher: 100n * Mi,
  virtlogd: 25n * Mi,
  virtqemud: 40n * Mi,
  qemu: 50n * Mi,
} as const;

/** Per-item additions, as upstream names them. */
export const OVERHEAD_PARTS = {
  perVcpu: 8n * Mi,
  ioThread: 8n * Mi,
  videoRam: 32n * Mi,
  arm64Pflash: 128n * Mi,
  vfio: Gi,
  downwardMetrics: Mi,
  probeEach: 10n * Mi,
  probeBinary: 100n * Mi,
  sev: 256n * Mi,
  tpm: 53n * Mi,
  dedicatedOrGuaranteed: 100n * Mi,
} as const;

type ResourceList = Record<string, string | number | undefined>;

/** The parts of a VMI the overhead depends on (any `kubevirt.io/v1` VMI satisfies it). */
export interface OverheadInput {
  spec?: {
    architecture?: string;
    domain?: {
      resources?: { requests?: ResourceList; limits?: ResourceList };
      cpu?: { cores?: number; sockets?: number; threads?: number; dedicatedCpuPlacement?: boolean };
      memory?: { reservedOverhead?: { addedOverhead?: string | number } };
      launchSecurity?: { sev?: unknown; snp?: unknown };
      devices?: {
        autoattachGraphicsDevice?: boolean;
        hostDevices?: unknown[];
        gpus?: unknown[];
        interfaces?: Array<{ name?: string; sriov?: unknown }>;
        tpm?: { enabled?: boolean };
      };
    };
    volumes?: Array<{ downwardMetrics?: unknown }>;
    livenessProbe?: { exec?: unknown };
    readinessProbe?: { exec?: unknown };
  };
}

/** `hardware.GetNumberOfVCPUs`: sockets * cores * threads, where a zero factor is skipped. */
export function vcpuCount(cpu: { cores?: number; sockets?: number; threads?: number } | undefined): number {
  if (!cpu) return 0;
  let n = cpu.cores ?? 0;
  for (const f of [cpu.sockets ?? 0, cpu.threads ?? 0]) {
    if (f !== 0) n = n === 0 ? f : n * f;
  }
  return n;
}

/** `VirtualMachineInstance.IsCPUDedicated`. */
export function isCpuDedicated(vmi: OverheadInput): boolean {
  return vmi.spec?.domain?.cpu?.dedicatedCpuPlacement === true;
}

function cmpQuantity(a: string | number | undefined, b: string | number | undefined, field: string): boolean {
  const qa = parseQuantity(a ?? 0, field);
  const qb = parseQuantity(b ?? 0, field);
  // Compare a/10^sa with b/10^sb exactly.
  const s = Math.max(qa.scale, qb.scale);
  return qa.num * 10n ** BigInt(s - qa.scale) === qb.num * 10n ** BigInt(s - qb.scale);
}

function isZero(v: string | number | undefined, field: string): boolean {
  return v === undefined || parseQuantity(v, field).num === 0n;
}

/** `WantsToHaveQOSGuaranteed`: memory and cpu requests set and equal to their limits. */
export function wantsGuaranteedQos(vmi: OverheadInput): boolean {
  const r = vmi.spec?.domain?.resources ?? {};
  const req = r.requests ?? {};
  const lim = r.limits ?? {};
  const base = 'spec.domain.resources';
  return (
    !isZero(req.memory, `${base}.requests.memory`) &&
    cmpQuantity(req.memory, lim.memory, `${base}.limits.memory`) &&
    !isZero(req.cpu, `${base}.requests.cpu`) &&
    cmpQuantity(req.cpu, lim.cpu, `${base}.limits.cpu`)
  );
}

/** `vmitrait.HasVFIO`: host devices, GPUs or an SR-IOV interface. */
export function hasVfio(vmi: OverheadInput): boolean {
  const d = vmi.spec?.domain?.devices;
  return (
    (d?.hostDevices?.length ?? 0) > 0 ||
    (d?.gpus?.length ?? 0) > 0 ||
    (d?.interfaces ?? []).some((i) => i.sriov !== undefined)
  );
}

/** `tpm.HasDevice`: a TPM not explicitly disabled. */
export function hasTpm(vmi: OverheadInput): boolean {
  const tpm = vmi.spec?.domain?.devices?.tpm;
  return tpm !== undefined && tpm !== null && tpm.enabled !== false;
}

/** Any SEV flavour (SEV, SEV-ES, SEV-SNP). */
export function isSev(vmi: OverheadInput): boolean {
  const ls = vmi.spec?.domain?.launchSecurity;
  return ls?.sev !== undefined || ls?.snp !== undefined;
}

/** Options the cluster configuration contributes. */
export interface OverheadOptions {
  /** The VMI's CPU architecture in Go's spelling (`amd64`, `arm64`, `s390x`); defaults to amd64. */
  arch?: string;
  /** `spec.configuration.additionalGuestMemoryOverheadRatio` of the KubeVirt CR. */
  additionalOverheadRatio?: string;
}

/**
 * The memory overhead in bytes of the launcher pod for a VMI, as upstream computes it.
 * Throws a QuantityError naming the field if a quantity in the VMI is malformed.
 */
export function memoryOverhead(vmi: OverheadInput, opts: OverheadOptions = {}): bigint {
  const domain = vmi.spec?.domain ?? {};
  const requests = domain.resources?.requests ?? {};
  const limits = domain.resources?.limits ?? {};
  let overhead = 0n;

  // Page tables: one bit per 512 bytes of RAM, computed on the request rounded up to kB.
  const memReq = requests.memory ?? 0;
  const kilo = quantityScaledValue(parseQuantity(memReq, 'spec.domain.resources.requests.memory'), 3);
  overhead += (kilo * 1000n) / 512n;

  for (const part of Object.values(FIXED_OVERHEAD)) overhead += part;

  let vcpus: bigint;
  if (domain.cpu) {
    vcpus = BigInt(vcpuCount(domain.cpu));
  } else if (limits.cpu !== undefined) {
    vcpus = quantityValue(parseQuantity(limits.cpu, 'spec.domain.resources.limits.cpu'));
  } else if (requests.cpu !== undefined) {
    vcpus = quantityValue(parseQuantity(requests.cpu, 'spec.domain.resources.requests.cpu'));
  } else {
    vcpus = 0n;
  }
  if (vcpus < 1n) vcpus = 1n;
  overhead += OVERHEAD_PARTS.perVcpu * vcpus;
  overhead += OVERHEAD_PARTS.ioThread;

  if (domain.devices?.autoattachGraphicsDevice !== false) overhead += OVERHEAD_PARTS.videoRam;
  if ((opts.arch ?? 'amd64') === 'arm64') overhead += OVERHEAD_PARTS.arm64Pflash;
  if (hasVfio(vmi)) overhead += OVERHEAD_PARTS.vfio;
  if ((vmi.spec?.volumes ?? []).some((v) => v.downwardMetrics !== undefined))
    overhead += OVERHEAD_PARTS.downwardMetrics;

  const liveness = vmi.spec?.livenessProbe?.exec !== undefined;
  const readiness = vmi.spec?.readinessProbe?.exec !== undefined;
  if (liveness) overhead += OVERHEAD_PARTS.probeEach;
  if (readiness) overhead += OVERHEAD_PARTS.probeEach;
  if (liveness || readiness) overhead += OVERHEAD_PARTS.probeBinary;

  if (isSev(vmi)) overhead += OVERHEAD_PARTS.sev;
  if (hasTpm(vmi)) overhead += OVERHEAD_PARTS.tpm;
  if (isCpuDedicated(vmi) || wantsGuaranteedQos(vmi)) overhead += OVERHEAD_PARTS.dedicatedOrGuaranteed;

  const added = domain.memory?.reservedOverhead?.addedOverhead;
  if (added !== undefined) {
    overhead += bytesOf(added, 'spec.domain.memory.reservedOverhead.addedOverhead') ?? 0n;
  }

  const ratio = opts.additionalOverheadRatio;
  if (ratio !== undefined && ratio !== '') {
    const r = Number(ratio);
    // Upstream logs and ignores an unparsable ratio (admission already rejects it).
    if (Number.isFinite(r) && /^\s*[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?\s*$/.test(ratio)) {
      overhead = multiplyMemory(overhead, r);
    }
  }
  return overhead;
}

/** Upstream's MultiplyMemory: adds trunc(ceil(bytes/1000) * (ratio - 1)) kB. */
export function multiplyMemory(bytes: bigint, ratio: number): bigint {
  const kilo = quantityScaledValue({ num: bytes, scale: 0 }, 3);
  const addition = Math.trunc(Number(kilo) * (ratio - 1.0));
  return bytes + BigInt(addition) * 1000n;
}
