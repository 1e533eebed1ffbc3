/**
 * virt-exportproxy's install objects (upstream's NewExportProxyDeployment,
 * NewExportProxyService and rbac/exportproxy.go): its account `kubevirt-exportproxy`, a
 * one-replica Deployment of `kubevirt-ts virt-exportproxy` in the kubevirt-ts image with
 * its serving pair (`kubevirt-exportproxy-certs`, from the install's CA) and the CA
 * bundle the export servers' certificates chain to, and the ClusterIP Service
 * `virt-exportproxy` (443). An Ingress of the user's to that Service gives the exports'
 * external links (docs/storage.md). Its ClusterRole reads exports, as upstream's, and
 * Services: it reaches an export's server by its Service's ClusterIP, not by DNS.
 */
import type { KubeObject } from '../../runtime/types';
import { EXPORTPROXY_CERTS } from './cert-secrets';
import {
  componentEnv,
  componentLabels,
  devClusterPodFields,
  type InstallOptions,
  nonRootPodSecurity,
  unprivilegedContainerSecurity,
} from './install-options';
import { clusterRoleFor, serviceAccount } from './rbac';

/** The Deployment and Service (upstream's VirtExportProxyName). */
export const EXPORTPROXY_NAME = 'virt-exportproxy';
/** Its ServiceAccount (upstream's ExportProxyServiceAccountName). */
export const EXPORTPROXY_ACCOUNT = 'kubevirt-exportproxy';
const DIR = '/etc/virt-exportproxy';

/** The proxy's container port: upstream's 8443; on the dev cluster's host network one nothing else holds. */
export function exportProxyPort(o: InstallOptions): number {
  return o.devCluster ? 8447 : 8443;
}

/** Every install object of virt-exportproxy. */
export function virtExportProxyObjects(o: InstallOptions): KubeObject[] {
  const labels = componentLabels(EXPORTPROXY_NAME);
  const port = exportProxyPort(o);
  const deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: EXPORTPROXY_NAME, namespace: o.namespace, labels },
    spec: {
      replicas: 1,
      selector: { matchLabels: { 'kubevirt.io': EXPORTPROXY_NAME } },
      template: {
        metadata: { labels },
        spec: {
          serviceAccountName: EXPORTPROXY_ACCOUNT,
          ...devClusterPodFields(o),
          securityContext: nonRootPodSecurity(),
          containers: [
            {
              // Upstream's container name (virt-exportproxy is too long for it there).
              name: 'exportproxy',
              image: o.image,
              imagePullPolicy: o.imagePullPolicy,
              args: [
                'virt-exportproxy',
                `--port=${port}`,
                `--tls-cert-file=${DIR}/certificates/tls.crt`,
                `--tls-key-file=${DIR}/certificates/tls.key`,
                `--ca-bundle=${DIR}/ca/ca-bundle`,
              ],
              env: componentEnv(o),
              ports: [{ name: 'exportproxy', containerPort: port, protocol: 'TCP' }],
              readinessProbe: { httpGet: { scheme: 'HTTPS', port, path: '/healthz' }, periodSeconds: 5 },
              resources: { requests: { cpu: '5m', memory: '64Mi' } },
              securityContext: unprivilegedContainerSecurity(),
              volumeMounts: [
                { name: 'certificates', mountPath: `${DIR}/certificates`, readOnly: true },
                { name: 'ca', mountPath: `${DIR}/ca`, readOnly: true },
              ],
            },
          ],
          volumes: [
            { name: 'certificates', secret: { secretName: EXPORTPROXY_CERTS } },
            {
              name: 'ca',
              configMap: { name: 'kubevirt-ca', items: [{ key: 'ca-bundle', path: 'ca-bundle' }] },
            },
          ],
        },
      },
    },
  };
  const service = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: EXPORTPROXY_NAME, namespace: o.namespace, labels },
    spec: {
      type: 'ClusterIP',
      selector: { 'kubevirt.io': EXPORTPROXY_NAME },
      ports: [{ port: 443, targetPort: port, protocol: 'TCP' }],
    },
  };
  return [
    serviceAccount(EXPORTPROXY_ACCOUNT, o.namespace),
    ...clusterRoleFor(EXPORTPROXY_ACCOUNT, o.namespace, [
      // Whether the export is Ready and its Service's name (upstream's), and that Service's ClusterIP.
      { apiGroups: ['export.kubevirt.io'], resources: ['virtualmachineexports'], verbs: ['get'] },
      { apiGroups: [''], resources: ['services'], verbs: ['get'] },
    ]),
    deployment as KubeObject,
    service as KubeObject,
  ];
}
