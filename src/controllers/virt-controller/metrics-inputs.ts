/**
 * What virt-controller's metrics collector reads on each scrape (metrics/controller-metrics.ts):
 * the VMs, VMIs and migrations in the informers' caches, each VMI's running launcher pod
 * and memory overhead, leadership and readiness, and the controllers' work queues. Apart
 * from the composition root (virt-controller.ts), which only hands over its parts.
 */
import type { ClusterConfig } from '../../api/config/cluster-config';
import type { Pod } from '../common/pod';
import type { ControllerMetricsInputs } from '../metrics/controller-metrics';
import type { Informer } from '../runtime/informer';
import type { Manager } from '../runtime/manager';
import type { KubeObject } from '../runtime/types';
import { CREATED_BY_INDEX } from './child-watch';
import { memoryOverhead } from './services/memory-overhead';

/** The caches, the Manager and the configuration the inputs read from. */
export interface MetricsSources {
  vmInformer: Informer<KubeObject>;
  vmiInformer: Informer<KubeObject>;
  migrationInformer: Informer<KubeObject>;
  /** Launcher pods, indexed by {@link CREATED_BY_INDEX}. */
  podInformer: Informer<KubeObject>;
  manager: Manager;
  config: () => ClusterConfig;
}

/** The collector's inputs over `s`, read when called. */
export function controllerMetricsInputs(s: MetricsSources): ControllerMetricsInputs {
  return {
    vms: () => s.vmInformer.indexer.list(),
    vmis: () => s.vmiInformer.indexer.list(),
    migrations: () => s.migrationInformer.indexer.list(),
    podOf: (vmi) => {
      const pods = s.podInformer.indexer.byIndex(CREATED_BY_INDEX, vmi.metadata?.uid ?? '') as Pod[];
      return pods.find((p) => p.status?.phase === 'Running' && p.spec?.nodeName === vmi.status?.nodeName)
        ?.metadata?.name;
    },
    overhead: (vmi) => {
      try {
        const c = s.config();
        return Number(
          memoryOverhead(vmi, {
            arch: vmi.spec.architecture || c.defaultArchitecture,
            additionalOverheadRatio: c.configuration.additionalGuestMemoryOverheadRatio,
          }),
        );
      } catch {
        return undefined;
      }
    },
    leading: () => s.manager.isLeader(),
    ready: () => s.manager.isReady(),
    queues: () => s.manager.controllerList.map((c) => ({ name: c.name, queue: c.queue })),
  };
}
