/**
 * virt-api's install objects, as upstream's virt-operator renders them: the Deployment,
 * its Service, the `v1.subresources.kubevirt.io` APIService, the mutating and validating
 * webhook configurations (caBundle, failurePolicy Fail, sideEffects None, timeouts) and
 * its RBAC (service account, cluster role, bindings, and reading the API server's
 * authentication ConfigMap in kube-system), and its PodDisruptionBudget (./disruption-budget.ts).
 */
import { UPLOAD_TOKEN_SIGNER } from './cert-secrets';
import { podDisruptionBudgetFor } from './disruption-budget';
import { nonRootPodSecurity, unprivilegedContainerSecurity } from './install-options';
import { type Hook, MUTATING, VALIDATING } from './virt-api-webhooks';

/** The APIService of CDI's upload.cdi.kubevirt.io, served by virt-api. */
export const UPLOAD_API_SERVICE = 'v1beta1.upload.cdi.kubevirt.io';
/** Where virt-api reads the upload-token signer's key. */
const SIGNER_PATH = '/etc/virt-api/upload-token-signer';

/** Options of {@link virtApiComponents}. */
export interface VirtApiComponentOptions {
  /** KubeVirt's namespace. */
  namespace: string;
  /** The kubevirt-ts image holding `kubevirt-ts virt-api`. */
  image: string;
  /**
   * PEM of the CA that signed virt-api's serving certificate (base64-encoded here); none
   * in the plain manifests, where `kubevirt-ts virt-certs` patches it in (virt-api-plain.ts).
   */
  caBundle?: string;
  /** Secrets holding the serving pair (tls.crt/tls.key) and the handler client pair plus ca.crt. */
  servingSecret?: string;
  handlerClientSecret?: string;
  replicas?: number;
  /**
   * The pods hold the node's port (host network): a rolling update removes the old pod
   * before it starts the new one (maxSurge 0), which could not bind the port otherwise.
   */
  exclusivePort?: boolean;
  /** The port virt-api listens on (default 8443) and its Service forwards to. */
  port?: number;
  /**
   * Webhooks and APIService reach virt-api through its Service (default); `url` points the
   * webhooks at a base URL instead (virt-api running outside the cluster, as in tests).
   */
  webhookUrl?: string;
  /** Webhook timeout in seconds (default 10, upstream's). */
  timeoutSeconds?: number;
}

type Obj = Record<string, unknown>;

const NAME = 'virt-api';
const LABELS = {
  'kubevirt.io': 'virt-api',
  'app.kubernetes.io/component': 'kubevirt',
  'app.kubernetes.io/managed-by': 'virt-operator',
};

function webhook(h: Hook, o: VirtApiComponentOptions, mutating: boolean): Obj {
  const caBundle = o.caBundle === undefined ? {} : { caBundle: Buffer.from(o.caBundle).toString('base64') };
  const clientConfig = o.webhookUrl
    ? { url: `${o.webhookUrl.replace(/\/$/, '')}${h.path}`, ...caBundle }
    : { service: { namespace: o.namespace, name: NAME, path: h.path, port: 443 }, ...caBundle };
  return {
    name: h.name,
    admissionReviewVersions: ['v1'],
    clientConfig,
    failurePolicy: h.failurePolicy ?? 'Fail',
    // The eviction webhook marks the VMI (with a dry-run patch on a dry run), as upstream's.
    sideEffects: h.resources.includes('pods/eviction') ? 'NoneOnDryRun' : 'None',
    timeoutSeconds: o.timeoutSeconds ?? 10,
    matchPolicy: 'Equivalent',
    ...(mutating ? { reinvocationPolicy: 'Never' } : {}),
    rules: [
      {
        apiGroups: [h.group],
        apiVersions: ['*'],
        resources: h.resources,
        operations: h.operations,
        scope: '*',
      },
    ],
    ...(h.matchConditions ? { matchConditions: h.matchConditions } : {}),
  };
}

function rbac(o: VirtApiComponentOptions): Obj[] {
  const ns = o.namespace;
  const account = 'kubevirt-apiserver';
  const rules = [
    {
      apiGroups: ['kubevirt.io'],
      resources: ['virtualmachines', 'virtualmachineinstances', 'kubevirts'],
      verbs: ['get', 'list', 'watch'],
    },
    {
      apiGroups: ['kubevirt.io'],
      resources: ['virtualmachines', 'virtualmachines/status', 'virtualmachineinstances'],
      verbs: ['patch', 'update'],
    },
    { apiGroups: ['kubevirt.io'], resources: ['virtualmachineinstances'], verbs: ['delete'] },
    {
      apiGroups: ['kubevirt.io'],
      resources: ['virtualmachineinstancemigrations'],
      verbs: ['create', 'get', 'list', 'watch'],
    },
    { apiGroups: ['instancetype.kubevirt.io'], resources: ['*'], verbs: ['get', 'list', 'watch'] },
    // A VM's stored instance type and preference revisions (admission and expand-spec read them).
    { apiGroups: ['apps'], resources: ['controllerrevisions'], verbs: ['get'] },
    // inferFromVolume: the labels of what backs the volume (claim, DataVolume, DataSource, snapshot).
    { apiGroups: [''], resources: ['persistentvolumeclaims'], verbs: ['get'] },
    { apiGroups: ['cdi.kubevirt.io'], resources: ['datavolumes', 'datasources'], verbs: ['get'] },
    // memorydump: the claim's filesystem overhead.
    { apiGroups: ['cdi.kubevirt.io'], resources: ['cdiconfigs'], verbs: ['get'] },
    { apiGroups: ['snapshot.storage.k8s.io'], resources: ['volumesnapshots'], verbs: ['get'] },
    // The restore webhook refuses a second restore in progress for one target.
    {
      apiGroups: ['snapshot.kubevirt.io'],
      resources: ['virtualmachinerestores'],
      verbs: ['get', 'list', 'watch'],
    },
    { apiGroups: [''], resources: ['pods'], verbs: ['get', 'list', 'watch'] },
    // evacuate/cancel refuses while the node has the drain taint.
    { apiGroups: [''], resources: ['nodes'], verbs: ['get'] },
    // virt-api authorises each subresource call itself (authorizer.ts), as upstream's.
    { apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create'] },
  ];
  return [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: account, namespace: ns, labels: LABELS } },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRole',
      metadata: { name: account, labels: LABELS },
      rules,
    },
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: { name: account, labels: LABELS },
      roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: account },
      subjects: [{ kind: 'ServiceAccount', name: account, namespace: ns }],
    },
    {
      // The aggregation layer's request-header settings (extension-apiserver-authentication).
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'RoleBinding',
      metadata: { name: `${account}-auth-reader`, namespace: 'kube-system', labels: LABELS },
      roleRef: {
        apiGroup: 'rbac.authorization.k8s.io',
        kind: 'Role',
        name: 'extension-apiserver-authentication-reader',
      },
      subjects: [{ kind: 'ServiceAccount', name: account, namespace: ns }],
    },
  ];
}

/** Every install object of virt-api. */
export function virtApiComponents(o: VirtApiComponentOptions): Obj[] {
  const port = o.port ?? 8443;
  const serving = o.servingSecret ?? 'kubevirt-virt-api-certs';
  const handlerClient = o.handlerClientSecret ?? 'kubevirt-virt-handler-certs';
  const deployment: Obj = {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: NAME, namespace: o.namespace, labels: LABELS },
    spec: {
      replicas: o.replicas ?? 2,
      ...(o.exclusivePort
        ? { strategy: { type: 'RollingUpdate', rollingUpdate: { maxSurge: 0, maxUnavailable: 1 } } }
        : {}),
      selector: { matchLabels: { 'kubevirt.io': 'virt-api' } },
      template: {
        metadata: { labels: LABELS },
        spec: {
          serviceAccountName: 'kubevirt-apiserver',
          // The image's default user is root: name a non-root one, as virt-controller's.
          securityContext: nonRootPodSecurity(),
          containers: [
            {
              name: NAME,
              image: o.image,
              command: ['kubevirt-ts', 'virt-api'],
              args: [
                `--port=${port}`,
                '--tls-cert-file=/etc/virt-api/certificates/tls.crt',
                '--tls-key-file=/etc/virt-api/certificates/tls.key',
                '--handler-client-cert=/etc/virt-handler/clientcertificates/tls.crt',
                '--handler-client-key=/etc/virt-handler/clientcertificates/tls.key',
                '--kubevirt-ca=/etc/virt-handler/clientcertificates/ca.crt',
                // UploadTokenRequests (upload.cdi.kubevirt.io) are signed with this key.
                `--upload-token-signer-key=${SIGNER_PATH}/tls.key`,
                `--kubevirt-namespace=${o.namespace}`,
                // kubevirt-ts's component accounts (upstream's kubevirt-controller and
                // kubevirt-handler are virt-api's built-in list): they set the reserved
                // kubevirt.io/ labels and fields on VMIs that users may not.
                ...['virt-controller', 'virt-handler'].map(
                  (sa) => `--privileged-user=system:serviceaccount:${o.namespace}:${sa}`,
                ),
              ],
              ports: [{ name: 'virt-api', containerPort: port, protocol: 'TCP' }],
              readinessProbe: {
                httpGet: { scheme: 'HTTPS', port, path: '/apis/subresources.kubevirt.io/v1/healthz' },
                initialDelaySeconds: 5,
                periodSeconds: 10,
              },
              resources: { requests: { cpu: '5m', memory: '128Mi' } },
              securityContext: unprivilegedContainerSecurity(),
              volumeMounts: [
                { name: 'kubevirt-virt-api-certs', mountPath: '/etc/virt-api/certificates', readOnly: true },
                {
                  name: 'kubevirt-virt-handler-certs',
                  mountPath: '/etc/virt-handler/clientcertificates',
                  readOnly: true,
                },
                { name: 'upload-token-signer', mountPath: SIGNER_PATH, readOnly: true },
              ],
            },
          ],
          volumes: [
            { name: 'kubevirt-virt-api-certs', secret: { secretName: serving, optional: false } },
            { name: 'kubevirt-virt-handler-certs', secret: { secretName: handlerClient, optional: false } },
            { name: 'upload-token-signer', secret: { secretName: UPLOAD_TOKEN_SIGNER, optional: false } },
          ],
        },
      },
    },
  };
  const service: Obj = {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: NAME, namespace: o.namespace, labels: LABELS },
    spec: {
      selector: { 'kubevirt.io': 'virt-api' },
      ports: [{ port: 443, targetPort: port, protocol: 'TCP' }],
    },
  };
  const apiService: Obj = {
    apiVersion: 'apiregistration.k8s.io/v1',
    kind: 'APIService',
    metadata: { name: 'v1.subresources.kubevirt.io', labels: LABELS },
    spec: {
      group: 'subresources.kubevirt.io',
      version: 'v1',
      service: { namespace: o.namespace, name: NAME, port: 443 },
      ...(o.caBundle === undefined ? {} : { caBundle: Buffer.from(o.caBundle).toString('base64') }),
      groupPriorityMinimum: 1000,
      versionPriority: 15,
    },
  };
  // CDI's upload.cdi.kubevirt.io (UploadTokenRequest), which virt-api serves in place of cdi-apiserver.
  const spec = apiService.spec as Record<string, unknown>;
  const uploadApiService: Obj = {
    ...apiService,
    metadata: { name: UPLOAD_API_SERVICE, labels: LABELS },
    spec: { ...spec, group: 'upload.cdi.kubevirt.io', version: 'v1beta1', versionPriority: 10 },
  };
  return [
    ...rbac(o),
    deployment,
    ...(podDisruptionBudgetFor(deployment as never) as Obj[]),
    service,
    apiService,
    uploadApiService,
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      metadata: { name: 'virt-api-mutator', labels: LABELS },
      webhooks: MUTATING.map((h) => webhook(h, o, true)),
    },
    {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'ValidatingWebhookConfiguration',
      metadata: { name: 'virt-api-validator', labels: LABELS },
      webhooks: VALIDATING.map((h) => webhook(h, o, false)),
    },
  ];
}
