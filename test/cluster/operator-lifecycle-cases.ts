/**
 * The operator test's last two steps on the real cluster (operator.serial.test.ts runs
 * them in order, after the install, the boot and the certificate renewal): an image tag
 * upgrade with the guest running, and the removal that BlockUninstallIfWorkloadsExist
 * holds back while a VMI exists.
 */
import { readFileSync } from 'node:fs';
import { expect } from 'vitest';
import { ctr } from '../../scripts/cluster/containerd';
import { type ClusterInfo, clusterPaths } from '../../scripts/cluster/state';
import { patchKubeVirtArgs } from '../support/cluster-pods';
import { waitFor } from '../support/wait';
import {
  condition,
  consoleAnswers,
  getJson,
  isReady,
  type KubeVirtCR,
  kubectl,
  kubectlResult,
  podsByComponent,
} from './operator-cluster';

/** KubeVirt's namespace, the guest's VM and the components the operator deploys. */
export const KV_NS = 'kubevirt';
export const VM = 'vm-tiny-cd';
export const COMPONENTS = ['virt-api', 'virt-controller', 'virt-handler'] as const;

/** What the steps need of the test. */
export interface OperatorCases {
  info: ClusterInfo;
  log: (line: string) => void;
}

const kvOf = (info: ClusterInfo) => getJson<KubeVirtCR>(info, 'kv', 'kubevirt', '-n', KV_NS);

/**
 * Retags the images as `tag`, points the KubeVirt CR at it and checks that every component
 * pod was replaced by one running the new tag while the guest's QEMU (`qemuPid`) ran on.
 */
export async function upgradeImageTag({ info, log }: OperatorCases, tag: string, qemuPid: number) {
  const k = (...args: string[]) => kubectl(info, ...args);
  const kv = () => kvOf(info);
  const NEXT_TAG = tag;
  const paths = clusterPaths(info.stateDir);
  for (const name of ['kubevirt-ts', 'virt-launcher'])
    ctr(paths, [
      'images',
      'tag',
      '--force',
      `localhost/kubevirt-ts/${name}:latest`,
      `localhost/kubevirt-ts/${name}:${NEXT_TAG}`,
    ]);
  const pods = podsByComponent(info, KV_NS);
  const oldUids = new Set(COMPONENTS.flatMap((c) => (pods.get(c) ?? []).map((p) => p.metadata.uid)));
  const t0 = performance.now();
  k(...patchKubeVirtArgs({ spec: { imageTag: NEXT_TAG } }));
  await waitFor(
    `observedKubeVirtVersion ${NEXT_TAG}`,
    () => {
      const cr = kv();
      return cr.status?.observedKubeVirtVersion === NEXT_TAG && condition(cr, 'Available')?.status === 'True';
    },
    400_000,
    1_000,
  );
  log(`image tag upgrade to Available at the new version: ${Math.round(performance.now() - t0)} ms`);
  const cr = kv();
  expect(cr.status?.targetKubeVirtVersion).toBe(NEXT_TAG);
  expect(cr.status?.phase).toBe('Deployed');
  const after = podsByComponent(info, KV_NS);
  for (const c of COMPONENTS) {
    const list = after.get(c) ?? [];
    expect(list.length, c).toBeGreaterThan(0);
    for (const p of list) {
      expect(oldUids.has(p.metadata.uid), `${c} pod ${p.metadata.name} replaced`).toBe(false);
      expect(p.spec.containers[0]?.image).toBe(`localhost/kubevirt-ts/kubevirt-ts:${NEXT_TAG}`);
    }
  }
  // The guest ran on: the same QEMU process, and the new virt-api and virt-handler reach its console.
  expect(readFileSync(`/proc/${qemuPid}/cmdline`, 'utf8')).toContain(`guest=default_${VM},`);
  expect(getJson<KubeVirtCR>(info, 'vmi', VM, '-n', 'default').status?.phase).toBe('Running');
  expect(await consoleAnswers(info, VM, { expr: '7*6', tag: 'Y' })).toBe(42);
}

/**
 * Deletes the KubeVirt CR: refused while the VM runs, then everything but the operator goes,
 * except the VolumeSnapshot CRDs the operator created (the cluster's, not the install's).
 */
export async function removeWithWorkloadBlock({ info, log }: OperatorCases) {
  const k = (...args: string[]) => kubectl(info, ...args);
  const kv = () => kvOf(info);
  const kvOrGone = (): KubeVirtCR | undefined =>
    kubectlResult(info, ['get', 'kv', 'kubevirt', '-n', KV_NS]).code === 0 ? kv() : undefined;
  const ready = (c: string) => (podsByComponent(info, KV_NS).get(c) ?? []).filter(isReady);
  k('delete', 'kv', 'kubevirt', '-n', KV_NS, '--wait=false');
  const blocked = await waitFor(
    'Degraded DeletionFailed',
    () => {
      const cr = kv();
      return condition(cr, 'Degraded')?.reason === 'DeletionFailed' ? cr : undefined;
    },
    60_000,
    500,
  );
  expect(blocked.status?.phase).toBe('Deleting');
  expect(condition(blocked, 'Degraded')?.status).toBe('True');
  expect(condition(blocked, 'Degraded')?.message).toMatch(/VirtualMachineInstance/);
  expect(ready('virt-api')).toHaveLength(1);

  k('delete', 'vm', VM, '-n', 'default', '--wait=false');
  await waitFor(
    'the VMI gone',
    () => kubectlResult(info, ['get', 'vmi', VM, '-n', 'default']).code !== 0,
    180_000,
    1_000,
  );
  await waitFor('the KubeVirt CR gone', () => kvOrGone() === undefined, 180_000, 1_000);
  // (Not `all`: the removed CRDs' kinds are in that category, and kubectl's discovery cache still lists them.)
  const kinds =
    'deployments,daemonsets,services,pods,serviceaccounts,secrets,configmaps,roles,rolebindings,clusterroles,clusterrolebindings,' +
    'validatingwebhookconfigurations,mutatingwebhookconfigurations,apiservices,customresourcedefinitions,csidrivers,storageclasses';
  // A CRD the operator deleted lingers while the API server cleans up its objects: wait.
  const managed = await waitFor(
    'nothing managed by the operator left',
    () => {
      const left = k(
        'get',
        kinds,
        '-A',
        '-l',
        'app.kubernetes.io/managed-by=virt-operator',
        '-o',
        'name',
      ).trim();
      return left === '' ? 'none' : undefined;
    },
    120_000,
    1_000,
  ).catch(() =>
    k('get', kinds, '-A', '-l', 'app.kubernetes.io/managed-by=virt-operator', '-o', 'name').trim(),
  );
  expect(managed).toBe('none');
  const remaining = await waitFor(
    'only the operator in its namespace',
    () => {
      const names = k('get', 'deployments,daemonsets,pods', '-n', KV_NS, '-o', 'name').trim().split('\n');
      return names.every((n) => /^(deployment\.apps\/virt-operator|pod\/virt-operator-)/.test(n))
        ? names
        : undefined;
    },
    120_000,
    1_000,
  );
  log(`left in ${KV_NS}: ${remaining.join(' ')}`);
  expect(remaining.filter((n) => n.startsWith('pod/'))).toHaveLength(2);
  const crds = k('get', 'crd', '-o', 'name')
    .trim()
    .split('\n')
    .filter((n) => n.includes('kubevirt.io'));
  expect(crds).toEqual(['customresourcedefinition.apiextensions.k8s.io/kubevirts.kubevirt.io']);
  // Deleting these would delete every VolumeSnapshot of the cluster: they stay, marked as made by the operator.
  const snapshotCrds = k(
    'get',
    'crd',
    '-l',
    'kubevirt-ts.io/created-if-absent-by=virt-operator',
    '-o',
    'name',
  )
    .trim()
    .split('\n')
    .sort();
  expect(snapshotCrds).toEqual(
    ['volumesnapshotclasses', 'volumesnapshotcontents', 'volumesnapshots'].map(
      (p) => `customresourcedefinition.apiextensions.k8s.io/${p}.snapshot.storage.k8s.io`,
    ),
  );
}
