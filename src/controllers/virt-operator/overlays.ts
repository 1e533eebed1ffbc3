/**
 * Install settings laid over every rendered workload, so that a renderer that does not
 * take them (virt-api's) still gets them: `spec.imagePullPolicy` on each container that
 * has none, and on the project's dev cluster (no kube-proxy) the host network and the API
 * server's loopback address for pods not already rendered that way.
 */
import type { KubeObject } from '../runtime/types';
import { componentEnv, devClusterPodFields, type InstallOptions } from './components/install-options';

type Container = { imagePullPolicy?: string; env?: Array<{ name?: string }> } & Record<string, unknown>;
type PodSpec = { hostNetwork?: boolean; containers?: Container[] } & Record<string, unknown>;

/** A copy of `obj` with the pull policy and dev-cluster fields applied. */
export function withInstallOverlays(obj: KubeObject, o: InstallOptions): KubeObject {
  if (obj.kind !== 'Deployment' && obj.kind !== 'DaemonSet') return obj;
  const spec = obj.spec as { template: { spec: PodSpec } };
  let pod: PodSpec = {
    ...spec.template.spec,
    containers: spec.template.spec.containers?.map((c) => ({ imagePullPolicy: o.imagePullPolicy, ...c })),
  };
  if (o.devCluster && !pod.hostNetwork) {
    const extra = componentEnv(o).filter((e) => String(e.name).startsWith('KUBERNETES_SERVICE_'));
    pod = {
      ...pod,
      ...devClusterPodFields(o),
      containers: pod.containers?.map((c) => ({
        ...c,
        env: [...(c.env ?? []).filter((e) => !String(e.name).startsWith('KUBERNETES_SERVICE_')), ...extra],
      })),
    };
  }
  return { ...obj, spec: { ...spec, template: { ...spec.template, spec: pod } } };
}
