/**
 * cdi-uploadproxy's install objects (CDI's operator installs the same in its namespace):
 * its account (it reads claims and the upload Services), a one-replica Deployment of
 * `kubevirt-ts cdi-uploadproxy` in the kubevirt-ts image with its serving pair, its
 * client pair for the upload pods, the upload-token signer's certificate (not its key) and
 * the install's CA bundle, and the ClusterIP Service `cdi-uploadproxy` (443). Users reach
 * it through a port-forward, a NodePort or an Ingress of their own (docs/storage.md), and
 * name it to virtctl with `--uploadproxy-url`.
 */
import type { KubeObject } from '../../runtime/types';
import { UPLOAD_TOKEN_SIGNER, UPLOADPROXY_SERVER_CERTS, UPLOADSERVER_CLIENT_CERTS } from './cert-secrets';
import {
  componentEnv,
  componentLabels,
  devClusterPodFields,
  type InstallOptions,
  nonRootPodSecurity,
  unprivilegedContainerSecurity,
} from './install-options';
import { clusterRoleFor, serviceAccount } from './rbac';

const NAME = 'cdi-uploadproxy';
const DIR = '/etc/cdi-uploadproxy';

/** The proxy's container port: 8443 (CDI's); on the dev cluster's host network one virt-api and the metrics servers do not use. */
export function uploadProxyPort(o: InstallOptions): number {
  return o.devCluster ? 8446 : 8443;
}

/** Every install object of cdi-uploadproxy. */
export function cdiUploadProxyObjects(o: InstallOptions): KubeObject[] {
  const labels = componentLabels(NAME);
  const port = uploadProxyPort(o);
  const deployment = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: NAME, namespace: o.namespace, labels },
    spec: {
      replicas: 1,
      selector: { matchLabels: { 'kubevirt.io': NAME } },
      template: {
        metadata: { labels },
        spec: {
          serviceAccountName: NAME,
          ...devClusterPodFields(o),
          securityContext: nonRootPodSecurity(),
          containers: [
            {
              name: NAME,
              image: o.image,
              imagePullPolicy: o.imagePullPolicy,
              args: [
                'cdi-uploadproxy',
                `--port=${port}`,
                `--tls-cert-file=${DIR}/server/tls.crt`,
                `--tls-key-file=${DIR}/server/tls.key`,
                `--signer-cert=${DIR}/signer/tls.crt`,
                `--client-cert=${DIR}/client/tls.crt`,
                `--client-key=${DIR}/client/tls.key`,
                `--ca-bundle=${DIR}/ca/ca-bundle`,
              ],
              env: componentEnv(o),
              ports: [{ name: 'uploadproxy', containerPort: port, protocol: 'TCP' }],
              readinessProbe: { httpGet: { scheme: 'HTTPS', port, path: '/healthz' }, periodSeconds: 5 },
              resources: { requests: { cpu: '10m', memory: '64Mi' } },
              securityContext: unprivilegedContainerSecurity(),
              volumeMounts: ['server', 'client', 'signer', 'ca'].map((v) => ({
                name: v,
                mountPath: `${DIR}/${v}`,
                readOnly: true,
              })),
            },
          ],
          volumes: [
            { name: 'server', secret: { secretName: UPLOADPROXY_SERVER_CERTS } },
            { name: 'client', secret: { secretName: UPLOADSERVER_CLIENT_CERTS } },
            // The signer's certificate only: the key stays with virt-api.
            {
              name: 'signer',
              secret: { secretName: UPLOAD_TOKEN_SIGNER, items: [{ key: 'tls.crt', path: 'tls.crt' }] },
            },
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
    metadata: { name: NAME, namespace: o.namespace, labels },
    spec: {
      selector: { 'kubevirt.io': NAME },
      ports: [{ name: 'uploadproxy', port: 443, targetPort: port, protocol: 'TCP' }],
    },
  };
  return [
    serviceAccount(NAME, o.namespace),
    ...clusterRoleFor(NAME, o.namespace, [
      // Which claims are upload targets and ready, and where their upload Service is.
      { apiGroups: [''], resources: ['persistentvolumeclaims', 'services'], verbs: ['get'] },
    ]),
    deployment as KubeObject,
    service as KubeObject,
  ];
}
