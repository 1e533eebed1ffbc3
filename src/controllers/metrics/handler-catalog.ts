/** virt-handler's metrics in the catalog (see catalog.ts): upstream's domainstats names, types and labels. */
import type { MetricDef, MetricType } from './catalog';

const VMI = ['node', 'namespace', 'name'] as const;

const handler = (name: string, type: MetricType, help: string, extra: readonly string[] = []): MetricDef => ({
  name,
  type,
  help,
  labels: [...VMI, ...extra],
  component: 'virt-handler',
});

/** virt-handler: per-VMI domain statistics (upstream's domainstats collector). */
export const HANDLER_DOMAIN_METRICS: readonly MetricDef[] = [
  handler(
    'kubevirt_vmi_vcpu_seconds_total',
    'counter',
    'Total amount of time spent in each state by each vcpu (cpu_time excluding hypervisor time).',
    ['id', 'state'],
  ),
  handler(
    'kubevirt_vmi_vcpu_wait_seconds_total',
    'counter',
    'Amount of time spent by each vcpu while waiting on I/O.',
    ['id'],
  ),
  handler(
    'kubevirt_vmi_vcpu_delay_seconds_total',
    'counter',
    'Amount of time spent by each vcpu waiting in the queue instead of running.',
    ['id'],
  ),
  handler(
    'kubevirt_vmi_cpu_usage_seconds_total',
    'counter',
    'Total CPU time spent in all modes (sum of both vcpu and hypervisor usage).',
  ),
  handler('kubevirt_vmi_cpu_user_usage_seconds_total', 'counter', 'Total CPU time spent in user mode.'),
  handler('kubevirt_vmi_cpu_system_usage_seconds_total', 'counter', 'Total CPU time spent in system mode.'),
  handler(
    'kubevirt_vmi_memory_resident_bytes',
    'gauge',
    'Resident set size of the process running the domain.',
  ),
  handler('kubevirt_vmi_memory_available_bytes', 'gauge', 'Amount of usable memory as seen by the domain.'),
  handler(
    'kubevirt_vmi_memory_usable_bytes',
    'gauge',
    'The amount of memory which can be reclaimed by balloon without pushing the guest system to swap.',
  ),
  handler(
    'kubevirt_vmi_memory_unused_bytes',
    'gauge',
    'The amount of memory left completely unused by the system.',
  ),
  handler(
    'kubevirt_vmi_memory_cached_bytes',
    'gauge',
    'The amount of memory that is being used to cache I/O and is available to be reclaimed.',
  ),
  handler('kubevirt_vmi_memory_actual_balloon_bytes', 'gauge', 'Current balloon size in bytes.'),
  handler(
    'kubevirt_vmi_memory_domain_bytes',
    'gauge',
    'The amount of memory in bytes allocated to the domain. The `memory` value in domain xml file.',
  ),
  handler(
    'kubevirt_vmi_memory_swap_in_traffic_bytes',
    'gauge',
    'The total amount of data read from swap space of the guest in bytes.',
  ),
  handler(
    'kubevirt_vmi_memory_swap_out_traffic_bytes',
    'gauge',
    'The total amount of memory written out to swap space of the guest in bytes.',
  ),
  handler(
    'kubevirt_vmi_memory_pgmajfault_total',
    'counter',
    'The number of page faults when disk IO was required.',
  ),
  handler(
    'kubevirt_vmi_memory_pgminfault_total',
    'counter',
    'The number of other page faults, when disk IO was not required.',
  ),
  handler('kubevirt_vmi_network_receive_bytes_total', 'counter', 'Total network traffic received in bytes.', [
    'interface',
  ]),
  handler(
    'kubevirt_vmi_network_transmit_bytes_total',
    'counter',
    'Total network traffic transmitted in bytes.',
    ['interface'],
  ),
  handler(
    'kubevirt_vmi_network_receive_packets_total',
    'counter',
    'Total network traffic received packets.',
    ['interface'],
  ),
  handler(
    'kubevirt_vmi_network_transmit_packets_total',
    'counter',
    'Total network traffic transmitted packets.',
    ['interface'],
  ),
  handler('kubevirt_vmi_network_receive_errors_total', 'counter', 'Total network received error packets.', [
    'interface',
  ]),
  handler(
    'kubevirt_vmi_network_transmit_errors_total',
    'counter',
    'Total network transmitted error packets.',
    ['interface'],
  ),
  handler(
    'kubevirt_vmi_network_receive_packets_dropped_total',
    'counter',
    'The total number of rx packets dropped on vNIC interfaces.',
    ['interface'],
  ),
  handler(
    'kubevirt_vmi_network_transmit_packets_dropped_total',
    'counter',
    'The total number of tx packets dropped on vNIC interfaces.',
    ['interface'],
  ),
  handler(
    'kubevirt_vmi_storage_read_traffic_bytes_total',
    'counter',
    'Total number of bytes read from storage.',
    ['drive'],
  ),
  handler('kubevirt_vmi_storage_write_traffic_bytes_total', 'counter', 'Total number of written bytes.', [
    'drive',
  ]),
  handler('kubevirt_vmi_storage_iops_read_total', 'counter', 'Total number of I/O read operations.', [
    'drive',
  ]),
  handler('kubevirt_vmi_storage_iops_write_total', 'counter', 'Total number of I/O write operations.', [
    'drive',
  ]),
  handler(
    'kubevirt_vmi_storage_read_times_seconds_total',
    'counter',
    'Total time spent on read operations.',
    ['drive'],
  ),
  handler(
    'kubevirt_vmi_storage_write_times_seconds_total',
    'counter',
    'Total time spent on write operations.',
    ['drive'],
  ),
  handler('kubevirt_vmi_storage_flush_requests_total', 'counter', 'Total storage flush requests.', ['drive']),
  handler(
    'kubevirt_vmi_storage_flush_times_seconds_total',
    'counter',
    'Total time spent on cache flushing.',
    ['drive'],
  ),
  handler(
    'kubevirt_vmi_migration_data_remaining_bytes',
    'gauge',
    'The remaining guest OS data to be migrated to the new VM.',
  ),
  handler(
    'kubevirt_vmi_migration_data_processed_bytes',
    'gauge',
    'The total Guest OS data processed and migrated to the new VM.',
  ),
  handler(
    'kubevirt_vmi_migration_dirty_memory_rate_bytes',
    'gauge',
    'The rate of memory being dirty in the Guest OS.',
  ),
  handler(
    'kubevirt_vmi_migration_memory_transfer_rate_bytes',
    'gauge',
    'The rate at which the memory is being transferred.',
  ),
];

/** virt-handler: its own state. */
export const HANDLER_METRICS: readonly MetricDef[] = [
  {
    name: 'kubevirt_virt_handler_ready_status',
    type: 'gauge',
    help: 'Indication for a virt-handler that is ready to serve requests.',
    labels: [],
    component: 'virt-handler',
  },
  {
    name: 'kubevirt_ts_virt_handler_domainstats_scrape_errors_total',
    type: 'counter',
    help: 'Domain statistics a scrape could not get from a launcher (it answered an error, or not within the scrape budget).',
    labels: ['reason'],
    component: 'virt-handler',
    own: true,
  },
  {
    name: 'kubevirt_ts_virt_handler_domainstats_scrape_duration_seconds',
    type: 'gauge',
    help: 'How long the last collection of domain statistics took.',
    labels: [],
    component: 'virt-handler',
    own: true,
  },
];
