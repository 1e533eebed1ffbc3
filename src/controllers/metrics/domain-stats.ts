/**
 * libvirt's bulk domain statistics (virConnectGetAllDomainStats, the `virsh domstats`
 * keys: `vcpu.<n>.time`, `balloon.rss`, `net.<n>.rx.bytes`, `block.<n>.rd.bytes`, ...)
 * turned into upstream's per-VMI samples, with upstream's units: nanoseconds become
 * seconds, KiB become bytes. A key libvirt did not report yields no sample (upstream's
 * `*Set` flags), never a zero.
 *
 * The record comes from the launcher, which runs the tenant's guest: its counts
 * (`vcpu.maximum`, `net.count`, `block.count`) are not trusted as loop bounds. The loops
 * stop at the VMI spec's counts ({@link StatsLimits}), which the handler computes.
 */

/** The stats record as the launcher's GetDomainStats reports it (JSON-safe values). */
export type StatsParams = Record<string, number | string | boolean>;

/** One sample: a catalog metric name, its extra labels (beyond node/namespace/name) and value. */
export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

const NS = 1e-9;
const KIB = 1024;

/** libvirt's virVcpuState, upstream's humanReadableState. */
const VCPU_STATE: Record<number, string> = { 0: 'offline', 1: 'running', 2: 'blocked' };

function num(p: StatsParams, key: string): number | undefined {
  const v = p[key];
  return typeof v === 'number' && Number.isFinite(v) ? v : undefined;
}

/** How many vCPUs, NICs and block devices a domain can have: the loops' bounds. */
export interface StatsLimits {
  vcpus: number;
  nets: number;
  blocks: number;
}

/** Past any real domain (QEMU's q35 tops out at 4096 vCPUs): the bound when no spec gives one. */
export const STATS_CEILING: StatsLimits = { vcpus: 4096, nets: 4096, blocks: 4096 };

const bound = (reported: number, limit: number, ceiling: number) =>
  Math.max(0, Math.min(reported, limit, ceiling));

/**
 * Samples of one domain's stats record; `interfaces` maps a NIC's host device to its VMI
 * interface name; `limits` bounds the per-vCPU, per-NIC and per-drive loops (the VMI spec's
 * counts; never above {@link STATS_CEILING}).
 */
export function domainSamples(
  p: StatsParams,
  interfaces: Record<string, string> = {},
  limits: StatsLimits = STATS_CEILING,
): Sample[] {
  const out: Sample[] = [];
  const push = (name: string, key: string, scale = 1, labels: Record<string, string> = {}) => {
    const v = num(p, key);
    if (v !== undefined) out.push({ name, labels, value: v * scale });
  };

  push('kubevirt_vmi_cpu_usage_seconds_total', 'cpu.time', NS);
  push('kubevirt_vmi_cpu_user_usage_seconds_total', 'cpu.user', NS);
  push('kubevirt_vmi_cpu_system_usage_seconds_total', 'cpu.system', NS);

  const vcpus = bound(
    num(p, 'vcpu.maximum') ?? num(p, 'vcpu.current') ?? 0,
    limits.vcpus,
    STATS_CEILING.vcpus,
  );
  for (let i = 0; i < vcpus; i++) {
    const id = String(i);
    const state = VCPU_STATE[num(p, `vcpu.${i}.state`) ?? -1] ?? 'unknown';
    push('kubevirt_vmi_vcpu_seconds_total', `vcpu.${i}.time`, NS, { id, state });
    push('kubevirt_vmi_vcpu_wait_seconds_total', `vcpu.${i}.wait`, NS, { id });
    push('kubevirt_vmi_vcpu_delay_seconds_total', `vcpu.${i}.delay`, NS, { id });
  }

  push('kubevirt_vmi_memory_resident_bytes', 'balloon.rss', KIB);
  push('kubevirt_vmi_memory_available_bytes', 'balloon.available', KIB);
  push('kubevirt_vmi_memory_usable_bytes', 'balloon.usable', KIB);
  push('kubevirt_vmi_memory_unused_bytes', 'balloon.unused', KIB);
  push('kubevirt_vmi_memory_cached_bytes', 'balloon.disk_caches', KIB);
  push('kubevirt_vmi_memory_actual_balloon_bytes', 'balloon.current', KIB);
  push('kubevirt_vmi_memory_domain_bytes', 'balloon.maximum', KIB);
  push('kubevirt_vmi_memory_swap_in_traffic_bytes', 'balloon.swap_in', KIB);
  push('kubevirt_vmi_memory_swap_out_traffic_bytes', 'balloon.swap_out', KIB);
  push('kubevirt_vmi_memory_pgmajfault_total', 'balloon.major_fault');
  push('kubevirt_vmi_memory_pgminfault_total', 'balloon.minor_fault');

  const nets = bound(num(p, 'net.count') ?? 0, limits.nets, STATS_CEILING.nets);
  for (let i = 0; i < nets; i++) {
    // upstream's label is the interface's alias (the VMI's name for it) when there is one.
    const dev = String(p[`net.${i}.name`] ?? i);
    const iface = { interface: Object.hasOwn(interfaces, dev) ? interfaces[dev] : dev };
    push('kubevirt_vmi_network_receive_bytes_total', `net.${i}.rx.bytes`, 1, iface);
    push('kubevirt_vmi_network_transmit_bytes_total', `net.${i}.tx.bytes`, 1, iface);
    push('kubevirt_vmi_network_receive_packets_total', `net.${i}.rx.pkts`, 1, iface);
    push('kubevirt_vmi_network_transmit_packets_total', `net.${i}.tx.pkts`, 1, iface);
    push('kubevirt_vmi_network_receive_errors_total', `net.${i}.rx.errs`, 1, iface);
    push('kubevirt_vmi_network_transmit_errors_total', `net.${i}.tx.errs`, 1, iface);
    push('kubevirt_vmi_network_receive_packets_dropped_total', `net.${i}.rx.drop`, 1, iface);
    push('kubevirt_vmi_network_transmit_packets_dropped_total', `net.${i}.tx.drop`, 1, iface);
  }

  const blocks = bound(num(p, 'block.count') ?? 0, limits.blocks, STATS_CEILING.blocks);
  for (let i = 0; i < blocks; i++) {
    const drive = { drive: String(p[`block.${i}.name`] ?? i) };
    push('kubevirt_vmi_storage_read_traffic_bytes_total', `block.${i}.rd.bytes`, 1, drive);
    push('kubevirt_vmi_storage_write_traffic_bytes_total', `block.${i}.wr.bytes`, 1, drive);
    push('kubevirt_vmi_storage_iops_read_total', `block.${i}.rd.reqs`, 1, drive);
    push('kubevirt_vmi_storage_iops_write_total', `block.${i}.wr.reqs`, 1, drive);
    push('kubevirt_vmi_storage_read_times_seconds_total', `block.${i}.rd.times`, NS, drive);
    push('kubevirt_vmi_storage_write_times_seconds_total', `block.${i}.wr.times`, NS, drive);
    push('kubevirt_vmi_storage_flush_requests_total', `block.${i}.fl.reqs`, 1, drive);
    push('kubevirt_vmi_storage_flush_times_seconds_total', `block.${i}.fl.times`, NS, drive);
  }

  // Migration progress (the launcher adds libvirt's job stats while a migration runs).
  push('kubevirt_vmi_migration_data_remaining_bytes', 'job.data_remaining');
  push('kubevirt_vmi_migration_data_processed_bytes', 'job.data_processed');
  push('kubevirt_vmi_migration_dirty_memory_rate_bytes', 'job.memory_dirty_rate');
  push('kubevirt_vmi_migration_memory_transfer_rate_bytes', 'job.memory_bps');
  return out;
}
