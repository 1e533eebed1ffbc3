/**
 * Node placement and replicas from the KubeVirt CR, laid over the rendered workloads as
 * upstream does: `spec.infra` goes to the Deployments (virt-api, virt-controller: node
 * selector, affinity and tolerations merged into the pod template; `replicas`), and
 * `spec.workloads` to virt-handler's DaemonSet (it must run where VMs run).
 */
import type { ComponentConfig } from '../../api/generated/types';
import type { KubeObject } from '../runtime/types';

type PodSpec = Record<string, unknown> & {
  nodeSelector?: Record<string, string>;
  tolerations?: unknown[];
  affinity?: unknown;
};

function place(podSpec: PodSpec, c: ComponentConfig | undefined): PodSpec {
  const p = c?.nodePlacement;
  if (!p) return podSpec;
  return {
    ...podSpec,
    ...(p.nodeSelector ? { nodeSelector: { ...podSpec.nodeSelector, ...p.nodeSelector } } : {}),
    ...(p.tolerations ? { tolerations: [...(podSpec.tolerations ?? []), ...p.tolerations] } : {}),
    ...(p.affinity ? { affinity: p.affinity } : {}),
  };
}

/** A copy of `obj` with the placement that applies to it. */
export function withPlacement(
  obj: KubeObject,
  infra?: ComponentConfig,
  workloads?: ComponentConfig,
): KubeObject {
  if (obj.kind !== 'Deployment' && obj.kind !== 'DaemonSet') return obj;
  const c = obj.kind === 'Deployment' ? infra : workloads;
  const spec = obj.spec as { replicas?: number; template: { spec: PodSpec } };
  return {
    ...obj,
    spec: {
      ...spec,
      ...(obj.kind === 'Deployment' && c?.replicas !== undefined ? { replicas: c.replicas } : {}),
      template: { ...spec.template, spec: place(spec.template.spec, c) },
    },
  };
}
