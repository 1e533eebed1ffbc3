/**
 * One domain's libvirt bulk statistics (virConnectGetAllDomainStats, what `virsh
 * domstats` prints) as a JSON-safe record: 64-bit counters become numbers (exact up to
 * 2^53, far beyond any counter a guest reaches). Upstream's launcher reads the same call,
 * and the job statistics while a migration runs.
 */
import type { DomainRef, LibvirtClient } from '../libvirt';

/** virDomainStatsTypes groups upstream's launcher asks for: state, cpu, balloon, vcpu, interface, block. */
const STATS = 1 | 2 | 4 | 8 | 16 | 32;

/** The domain's stats record, field to value. */
export async function bulkStats(
  client: LibvirtClient,
  dom: DomainRef,
): Promise<Record<string, number | string | boolean>> {
  const records = await client.getAllDomainStats([dom], STATS);
  const out: Record<string, number | string | boolean> = {};
  for (const p of records[0]?.params ?? [])
    out[p.field] = typeof p.value === 'bigint' ? Number(p.value) : p.value;
  return out;
}
