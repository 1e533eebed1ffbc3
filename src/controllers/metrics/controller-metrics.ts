/**
 * virt-controller's metrics, computed on scrape from its informer caches (upstream's
 * vmistats/vmstats/migrationstats collectors): kubevirt_vmi_info and the per-phase count,
 * kubevirt_vm_info and the status-transition timestamps, migrations per phase, leading and
 * ready status; the work queues report through {@link WorkQueueMetrics}.
 */
import type {
  VirtualMachine,
  VirtualMachineInstance,
  VirtualMachineInstanceMigration,
} from '../../api/generated/types';
import type { KubeObject } from '../runtime/types';
import { CONTROLLER_METRICS } from './catalog';
import { ComponentRegistry, type Labels } from './registry';
import type { MetricsSource } from './server';
import { WorkQueueMetrics } from './workqueue-metrics';

/** What the collector reads; every list is an informer cache read. */
export interface ControllerMetricsInputs {
  vms: () => KubeObject[];
  vmis: () => KubeObject[];
  migrations: () => KubeObject[];
  /** The running launcher pod of a VMI (name), if any. */
  podOf: (vmi: VirtualMachineInstance) => string | undefined;
  /** The launcher memory overhead of a VMI in bytes (the pod renderer's), undefined when it cannot be computed. */
  overhead: (vmi: VirtualMachineInstance) => number | undefined;
  leading: () => boolean;
  ready: () => boolean;
  /** The controllers' work queues by name. */
  queues: () => { name: string; queue: { len(): number; inProgressSeconds(): number[] } }[];
}

const SNAPSHOT = CONTROLLER_METRICS.filter((m) => !m.name.startsWith('kubevirt_workqueue_')).map(
  (m) => m.name,
);

/** upstream's VM status groups (vmstats_collector.go). */
const STATUS_GROUP: Record<string, string> = {
  Provisioning: 'starting',
  Starting: 'starting',
  WaitingForVolumeBinding: 'starting',
  Running: 'running',
  Migrating: 'migrating',
  Stopped: 'non_running',
  Paused: 'non_running',
  Stopping: 'non_running',
  Terminating: 'non_running',
  CrashLoopBackOff: 'error',
  Unknown: 'error',
  ErrorUnschedulable: 'error',
  ErrImagePull: 'error',
  ImagePullBackOff: 'error',
  ErrorPvcNotFound: 'error',
  DataVolumeError: 'error',
};
const GROUPS = ['starting', 'running', 'migrating', 'non_running', 'error'] as const;

const ann = (a: Record<string, string> | undefined, k: string) => a?.[`vm.kubevirt.io/${k}`] ?? '';

/** The controller's registry and collector. */
export class ControllerMetrics implements MetricsSource {
  readonly metrics = new ComponentRegistry(CONTROLLER_METRICS.map((m) => m.name));
  readonly workqueues = new WorkQueueMetrics(this.metrics);
  private inputs?: ControllerMetricsInputs;

  /** Connects the collector to the controller's caches (once they exist). */
  observe(inputs: ControllerMetricsInputs): void {
    this.inputs = inputs;
  }

  async collect(): Promise<void> {
    const i = this.inputs;
    if (!i) return;
    const m = this.metrics;
    m.reset(SNAPSHOT);
    m.gauge('kubevirt_virt_controller_leading_status').set(i.leading() ? 1 : 0);
    m.gauge('kubevirt_virt_controller_ready_status').set(i.ready() ? 1 : 0);
    let outdated = 0;
    for (const o of i.vmis()) {
      const vmi = o as VirtualMachineInstance;
      const meta = vmi.metadata ?? {};
      const st = vmi.status ?? {};
      const os = st.guestOSInfo ?? {};
      const common = {
        node: st.nodeName ?? '',
        phase: (st.phase ?? '').toLowerCase(),
        os: ann(meta.annotations, 'os'),
        workload: ann(meta.annotations, 'workload'),
        flavor: ann(meta.annotations, 'flavor'),
        instance_type:
          (meta.annotations?.['kubevirt.io/instancetype-name'] ??
          meta.annotations?.['kubevirt.io/cluster-instancetype-name'])
            ? '<other>'
            : '',
        preference:
          (meta.annotations?.['kubevirt.io/preference-name'] ??
          meta.annotations?.['kubevirt.io/cluster-preference-name'])
            ? '<other>'
            : '',
        guest_os_kernel_release: os.kernelRelease ?? '',
        guest_os_machine: st.machine?.type ?? '',
        guest_os_arch: os.machine ?? '',
        guest_os_name: os.name ?? '',
        guest_os_version_id: os.versionId ?? '',
      };
      const isOutdated = meta.labels?.['kubevirt.io/outdatedLauncherImage'] !== undefined;
      if (isOutdated) outdated++;
      const evictable = isEvictable(vmi);
      m.gauge('kubevirt_vmi_phase_count').inc(common, 1);
      m.gauge('kubevirt_vmi_info').set(
        {
          ...common,
          namespace: meta.namespace ?? '',
          name: meta.name ?? '',
          evictable: String(evictable),
          outdated: String(isOutdated),
          vmi_pod: i.podOf(vmi) ?? '',
        },
        1,
      );
      const where = { node: st.nodeName ?? '', namespace: meta.namespace ?? '', name: meta.name ?? '' };
      m.gauge('kubevirt_vmi_non_evictable').set(where, evictable ? 0 : 1);
      const overhead = i.overhead(vmi);
      if (overhead !== undefined)
        m.gauge('kubevirt_vmi_launcher_memory_overhead_bytes').set(
          { namespace: where.namespace, name: where.name },
          overhead,
        );
    }
    m.gauge('kubevirt_vmi_number_of_outdated').set(outdated);

    for (const o of i.vms()) this.collectVm(o as VirtualMachine);

    const phases: Record<string, number> = { pending: 0, scheduling: 0, running: 0, unset: 0 };
    for (const o of i.migrations()) {
      const mig = o as VirtualMachineInstanceMigration;
      const phase = (mig.status?.phase ?? '').toLowerCase();
      // upstream's migrationstats collector: one series per final migration object, value 1.
      if (phase === 'succeeded' || phase === 'failed') {
        const who = {
          vmi: mig.spec?.vmiName ?? '',
          vmim: mig.metadata?.name ?? '',
          namespace: mig.metadata?.namespace ?? '',
        };
        m.gauge(`kubevirt_vmi_migration_${phase}`).set(who, 1);
        continue;
      }
      // upstream counts Scheduled, PreparingTarget and TargetReady as scheduling.
      const bucket =
        phase === ''
          ? 'unset'
          : phase === 'pending'
            ? 'pending'
            : ['scheduling', 'scheduled', 'preparingtarget', 'targetready'].includes(phase)
              ? 'scheduling'
              : phase === 'running'
                ? 'running'
                : undefined;
      if (bucket) phases[bucket]++;
    }
    for (const [p, n] of Object.entries(phases)) m.gauge(`kubevirt_vmi_migrations_in_${p}_phase`).set(n);
    this.workqueues.collect(i.queues());
  }

  private collectVm(vm: VirtualMachine): void {
    const m = this.metrics;
    const meta = vm.metadata ?? {};
    const id: Labels = { namespace: meta.namespace ?? '', name: meta.name ?? '' };
    const status = vm.status?.printableStatus ?? '';
    const group = STATUS_GROUP[status] ?? '<unknown>';
    const tmpl = vm.spec?.template?.metadata?.annotations;
    m.gauge('kubevirt_vm_info').set(
      {
        ...id,
        os: ann(tmpl, 'os'),
        workload: ann(tmpl, 'workload'),
        flavor: ann(tmpl, 'flavor'),
        instance_type: vm.spec?.instancetype ? '<other>' : '',
        preference: vm.spec?.preference ? '<other>' : '',
        status,
        status_group: group,
      },
      1,
    );
    if (meta.creationTimestamp)
      m.gauge('kubevirt_vm_create_date_timestamp_seconds').set(
        id,
        Date.parse(String(meta.creationTimestamp)) / 1000,
      );
    // upstream: the latest transition of Ready/Failure/Paused, on the current group's metric; 0 on the others.
    let last = -1;
    for (const c of vm.status?.conditions ?? []) {
      if (!['Ready', 'Failure', 'Paused'].includes(String(c.type)) || !c.lastTransitionTime) continue;
      last = Math.max(last, Math.floor(Date.parse(String(c.lastTransitionTime)) / 1000));
    }
    const current = group === '<unknown>' ? 'error' : group;
    for (const g of GROUPS)
      m.setSnapshot(
        `kubevirt_vm_${g}_status_last_transition_timestamp_seconds`,
        id,
        g === current ? last : 0,
      );
  }

  text(): Promise<string> {
    return this.metrics.text();
  }
}

/** upstream's isVMEvictable: LiveMigrate eviction needs a True LiveMigratable condition. */
function isEvictable(vmi: VirtualMachineInstance): boolean {
  if (vmi.spec?.evictionStrategy !== 'LiveMigrate') return true;
  return (vmi.status?.conditions ?? []).some((c) => c.type === 'LiveMigratable' && c.status === 'True');
}
