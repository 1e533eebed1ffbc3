/**
 * kubevirt-ts installed on the test cluster the way a user installs it: the component
 * manifests in the default rendering (pods on the pod network reaching the API server and
 * each other through Services, which the cluster's kube-proxy serves) applied with
 * `kubectl apply -f`, images never pulled (they are imported), and a KubeVirt
 * resource with TCG guests (KVM is unusable for a guest on these machines, see
 * docs/cluster.md).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { CoreV1Api, V1Pod } from '@kubernetes/client-node';
import { parseAllDocuments, stringify } from 'yaml';
import type { ClusterInfo } from '../../scripts/cluster/state';
import { manifestFiles } from '../../scripts/gen-manifests';
import { defaultInstallOptions } from '../../src/controllers/virt-operator/components/index';
import { waitFor } from './wait';

/**
 * Files of the manifests the shared cluster does without: the operator's (this installs
 * the components by hand), and the storage stack's: the shared cluster's CSI tests
 * (csi-registration, csi-provisioning) run the driver `csi.kubevirt-ts.io` in their own
 * process, and one driver name registers once with a kubelet. The storage stack as the
 * install brings it up is tested with the operator on its own cluster
 * (operator.serial.test.ts, storage-pvc-case.ts).
 */
const SKIPPED = ['kubevirt-ts-operator.yaml', '40-storage.yaml'];

/**
 * Writes the manifests into `dir` and applies them (and the KubeVirt resource); `kubectl
 * delete -f dir` undoes it. The files in SKIPPED are left out; virt-api's certificates
 * are made by the manifests' virt-certs. The
 * KubeVirt resource waits for virt-api: its validating webhook refuses until virt-api runs.
 */
export function installComponents(
  info: ClusterInfo,
  dir: string,
  kubectl: (...args: string[]) => string,
  /** Arguments appended to a component's container (e.g. shortened timeouts for a test). */
  extraArgs: { 'virt-controller'?: string[]; 'virt-handler'?: string[] } = {},
  /** More of the KubeVirt resource's `spec.configuration.developerConfiguration` (bench:density's CPU ratio). */
  developerConfiguration: Record<string, unknown> = {},
): void {
  awaitEarlierRemoval(kubectl);
  const opts = defaultInstallOptions({
    imagePullPolicy: 'Never',
    kubeletRootDir: join(info.stateDir, 'kubelet'),
  });
  for (const [name, text] of manifestFiles(opts)) {
    if (!SKIPPED.includes(name)) writeFileSync(join(dir, name), withArgs(text, extraArgs));
  }
  kubectl('apply', '-f', dir);
  // Not `wait --for=condition=Available`: with one replica and maxUnavailable 1 it holds at 0 ready.
  kubectl('-n', 'kubevirt', 'rollout', 'status', '--timeout=110s', 'deployment/virt-api');
  writeFileSync(
    join(dir, 'kubevirt-cr.yaml'),
    stringify({
      apiVersion: 'kubevirt.io/v1',
      kind: 'KubeVirt',
      metadata: { name: 'kubevirt', namespace: 'kubevirt' },
      spec: { configuration: { developerConfiguration: { useEmulation: true, ...developerConfiguration } } },
    }),
  );
  kubectl('apply', '-f', join(dir, 'kubevirt-cr.yaml'));
}

/**
 * Waits for an earlier file's `kubectl delete --wait=false -f` of the components to finish:
 * applying into the terminating `kubevirt` namespace is refused, and a terminating CRD
 * vanishes, with what this file creates of it, once its old objects are gone. The CSI
 * files under one host lock run back to back, so the next one's install meets the last
 * one's removal (the namespace's pods take their grace period to stop).
 */
function awaitEarlierRemoval(kubectl: (...args: string[]) => string): void {
  const ns = kubectl(
    'get',
    'namespace',
    'kubevirt',
    '--ignore-not-found',
    '-o',
    'jsonpath={.metadata.deletionTimestamp}',
  );
  const crds = kubectl(
    'get',
    'crd',
    '-o',
    'jsonpath={range .items[?(@.metadata.deletionTimestamp)]}{.metadata.name}{"\\n"}{end}',
  )
    .split('\n')
    .filter(Boolean);
  const gone = [...(ns ? ['namespace/kubevirt'] : []), ...crds.map((c) => `crd/${c}`)];
  if (!gone.length) return;
  const start = Date.now();
  // Under kubectlWith's 120 s limit.
  kubectl('wait', '--for=delete', '--timeout=110s', ...gone);
  process.stderr.write(
    `[install] waited ${Date.now() - start} ms for the earlier removal of ${gone.join(', ')}\n`,
  );
}

/** `text` (YAML documents) with `extra` appended to the named components' first container args. */
function withArgs(text: string, extra: Record<string, string[] | undefined>): string {
  if (!Object.values(extra).some((a) => a?.length)) return text;
  return parseAllDocuments(text)
    .map((d) => {
      const obj = d.toJS() as {
        kind?: string;
        metadata?: { name?: string };
        spec?: { template?: { spec?: { containers?: { args?: string[] }[] } } };
      };
      const add = ['Deployment', 'DaemonSet'].includes(obj?.kind ?? '')
        ? extra[obj.metadata?.name ?? '']
        : undefined;
      const c = obj?.spec?.template?.spec?.containers?.[0];
      if (add?.length && c) c.args = [...(c.args ?? []), ...add];
      return stringify(obj);
    })
    .join('---\n');
}

/** Waits (up to `timeoutMs`) for a Ready virt-handler on each of `nodes` and a Ready virt-controller. */
export async function componentsReady(core: CoreV1Api, nodes: string[], timeoutMs = 300_000): Promise<void> {
  const ready = (p: V1Pod) =>
    p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
  const pods = async (component: string) =>
    (await core.listNamespacedPod({ namespace: 'kubevirt', labelSelector: `kubevirt.io=${component}` }))
      .items;
  await waitFor(
    `a Ready virt-handler on ${nodes.join(', ')}`,
    async () => {
      const on = new Set((await pods('virt-handler')).filter(ready).map((p) => p.spec?.nodeName));
      return nodes.every((n) => on.has(n)) ? true : undefined;
    },
    timeoutMs,
    1_000,
  );
  await waitFor(
    'virt-controller Ready (leading)',
    async () => ((await pods('virt-controller')).some(ready) ? true : undefined),
    timeoutMs,
    1_000,
  );
}
