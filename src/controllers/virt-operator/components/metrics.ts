/**
 * How the components serve Prometheus metrics in an install, as upstream's virt-operator
 * renders it: each serving pod carries the `prometheus.kubevirt.io` label and a container
 * port named `metrics` (HTTPS, its own serving certificate from a Secret mounted
 * optional), and the headless Service `kubevirt-prometheus-metrics` selects them by that
 * label, its port 443 pointing at each pod's `metrics` port.
 */
import type { KubeObject } from '../../runtime/types';
import type { InstallOptions } from './install-options';

/** upstream's label on the pods that serve /metrics (value "true", as upstream's). */
export const PROMETHEUS_LABEL = { 'prometheus.kubevirt.io': 'true' } as const;

/** The Service Prometheus (a ServiceMonitor) finds the components through. */
export const METRICS_SERVICE = 'kubevirt-prometheus-metrics';

/** Components that serve metrics in the install (virt-api serves none yet). */
export type MetricsComponent = 'virt-handler' | 'virt-controller';

/**
 * The port `component` serves metrics on: upstream's 8443 in the pod's own network
 * namespace. On the dev cluster every component shares the node's host network and
 * virt-api holds 8443, so each gets a port of its own.
 */
export function metricsPort(o: InstallOptions, component: MetricsComponent): number {
  if (!o.devCluster) return 8443;
  return component === 'virt-handler' ? 8444 : 8445;
}

/** The container port entry, named `metrics` as the Service's targetPort. */
export function metricsContainerPort(o: InstallOptions, component: MetricsComponent) {
  return { name: 'metrics', containerPort: metricsPort(o, component), protocol: 'TCP' };
}

/** A Secret volume mounted read-only; `optional` as upstream's (the pod starts before it exists). */
export function certVolume(
  name: string,
  secretName: string,
  mountPath: string,
  optional: boolean,
): { mount: Record<string, unknown>; volume: Record<string, unknown> } {
  return {
    mount: { name, mountPath, readOnly: true },
    volume: { name, secret: { secretName, optional } },
  };
}

/** The headless Service selecting every metrics-serving pod. */
export function prometheusMetricsService(o: InstallOptions): KubeObject {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {
      name: METRICS_SERVICE,
      namespace: o.namespace,
      labels: {
        'app.kubernetes.io/managed-by': 'kubevirt-ts',
        'app.kubernetes.io/component': 'kubevirt',
        'kubevirt.io': '',
        ...PROMETHEUS_LABEL,
      },
    },
    spec: {
      selector: { ...PROMETHEUS_LABEL },
      ports: [{ name: 'metrics', port: 443, targetPort: 'metrics', protocol: 'TCP' }],
      type: 'ClusterIP',
      clusterIP: 'None',
    },
  } as KubeObject;
}
