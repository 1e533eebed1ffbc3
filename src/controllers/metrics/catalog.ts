/**
 * Every metric kubevirt-ts serves: upstream KubeVirt's name, type, help and labels
 * (docs/observability/metrics.md and pkg/monitoring/metrics), per component. The
 * collectors create their prom-client metrics from here, `scripts/gen-metrics-docs.ts`
 * renders docs/metrics.md from it and a test checks a scrape against it, so the three
 * cannot drift apart.
 */

/** Prometheus metric type. */
export type MetricType = 'counter' | 'gauge' | 'histogram';

/** One served metric. */
export interface MetricDef {
  name: string;
  type: MetricType;
  help: string;
  labels: readonly string[];
  component: 'virt-handler' | 'virt-controller' | 'all';
  /** True for metrics of kubevirt-ts's own that upstream does not have. */
  own?: boolean;
}

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

const WQ = ['name'] as const;

/** virt-controller. */
export const CONTROLLER_METRICS: readonly MetricDef[] = [
  {
    name: 'kubevirt_vmi_phase_count',
    type: 'gauge',
    help: 'Sum of VMIs per phase and node.',
    labels: [
      'node',
      'phase',
      'os',
      'workload',
      'flavor',
      'instance_type',
      'preference',
      'guest_os_kernel_release',
      'guest_os_machine',
      'guest_os_arch',
      'guest_os_name',
      'guest_os_version_id',
    ],
    component: 'virt-controller',
  },
  {
    name: 'kubevirt_vmi_info',
    type: 'gauge',
    help: 'Information about VirtualMachineInstances.',
    labels: [
      'node',
      'namespace',
      'name',
      'phase',
      'os',
      'workload',
      'flavor',
      'instance_type',
      'preference',
      'guest_os_kernel_release',
      'guest_os_machine',
      'guest_os_arch',
      'guest_os_name',
      'guest_os_version_id',
      'evictable',
      'outdated',
      'vmi_pod',
    ],
    component: 'virt-controller',
  },
  {
    name: 'kubevirt_vmi_non_evictable',
    type: 'gauge',
    help: 'Indication for a VirtualMachine that its eviction strategy is set to Live Migration but is not migratable.',
    labels: ['node', 'namespace', 'name'],
    component: 'virt-controller',
  },
  {
    name: 'kubevirt_vmi_launcher_memory_overhead_bytes',
    type: 'gauge',
    help: "Estimation of the memory amount required for virt-launcher's infrastructure components (e.g. libvirt, QEMU).",
    labels: ['namespace', 'name'],
    component: 'virt-controller',
  },
  {
    name: 'kubevirt_vmi_number_of_outdated',
    type: 'gauge',
    help: 'Indication for the total number of VirtualMachineInstance workloads that are not running within the most up-to-date version of the virt-launcher environment.',
    labels: [],
    component: 'virt-controller',
  },
  {
    name: 'kubevirt_vm_info',
    type: 'gauge',
    help: 'Information about Virtual Machines.',
    labels: [
      'namespace',
      'name',
      'os',
      'workload',
      'flavor',
      'instance_type',
      'preference',
      'status',
      'status_group',
    ],
    component: 'virt-controller',
  },
  {
    name: 'kubevirt_vm_create_date_timestamp_seconds',
    type: 'gauge',
    help: 'Virtual Machine creation timestamp.',
    labels: ['name', 'namespace'],
    component: 'virt-controller',
  },
  ...(['running', 'non_running', 'starting', 'migrating', 'error'] as const).map(
    (g): MetricDef => ({
      name: `kubevirt_vm_${g}_status_last_transition_timestamp_seconds`,
      type: 'counter',
      help: `Virtual Machine last transition timestamp to ${g.replace('_', '-')} status.`,
      labels: ['name', 'namespace'],
      component: 'virt-controller',
    }),
  ),
  ...(['pending', 'scheduling', 'running', 'unset'] as const).map(
    (p): MetricDef => ({
      name: `kubevirt_vmi_migrations_in_${p}_phase`,
      type: 'gauge',
      help: `Number of current ${p} migrations.`,
      labels: [],
      component: 'virt-controller',
    }),
  ),
  {
    name: 'kubevirt_virt_controller_leading_status',
    type: 'gauge',
    help: 'Indication for an operating virt-controller.',
    labels: [],
    component: 'virt-controller',
  },
  {
    name: 'kubevirt_virt_controller_ready_status',
    type: 'gauge',
    help: 'Indication for a virt-controller that is ready to take the lead.',
    labels: [],
    component: 'virt-controller',
  },
  {
    name: 'kubevirt_workqueue_adds_total',
    type: 'counter',
    help: 'Total number of adds handled by workqueue',
    labels: WQ,
    component: 'virt-controller',
  },
  {
    name: 'kubevirt_workqueue_depth',
    type: 'gauge',
    help: 'Current depth of workqueue',
    labels: WQ,
    component: 'virt-controller',
  },
  {
    name: 'kubevirt_workqueue_retries_total',
    type: 'counter',
    help: 'Total number of retries handled by workqueue',
    labels: WQ,
    component: 'virt-controller',
  },
  {
    name: 'kubevirt_workqueue_queue_duration_seconds',
    type: 'histogram',
    help: 'How long an item stays in workqueue before being requested.',
    labels: WQ,
    component: 'virt-controller',
  },
  {
    name: 'kubevirt_workqueue_work_duration_seconds',
    type: 'histogram',
    help: 'How long in seconds processing an item from workqueue takes.',
    labels: WQ,
    component: 'virt-controller',
  },
  {
    name: 'kubevirt_workqueue_unfinished_work_seconds',
    type: 'gauge',
    help: 'How many seconds of work have been in progress without being observed by work_duration.',
    labels: WQ,
    component: 'virt-controller',
  },
  {
    name: 'kubevirt_workqueue_longest_running_processor_seconds',
    type: 'gauge',
    help: 'How many seconds has the longest running processor for workqueue been running.',
    labels: WQ,
    component: 'virt-controller',
  },
];

/** Served by every component. */
export const COMMON_METRICS: readonly MetricDef[] = [
  {
    name: 'kubevirt_info',
    type: 'gauge',
    help: 'Version information.',
    labels: ['goversion', 'kubeversion'],
    component: 'all',
  },
];

/** Every served metric. */
export const ALL_METRICS: readonly MetricDef[] = [
  ...COMMON_METRICS,
  ...HANDLER_METRICS,
  ...HANDLER_DOMAIN_METRICS,
  ...CONTROLLER_METRICS,
];

/** The catalog entry of `name`; throws for a name that is not in it (a programming error). */
export function metricDef(name: string): MetricDef {
  const d = ALL_METRICS.find((m) => m.name === name);
  if (!d) throw new Error(`metric ${name} is not in the catalog (src/controllers/metrics/catalog.ts)`);
  return d;
}
