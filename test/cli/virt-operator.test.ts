/**
 * `kubevirt-ts virt-operator` as a process against a real API server (no controller
 * manager): a bad flag exits 1 naming it; with a KubeVirt CR it takes the Lease, installs
 * the components at the --image-tag given (CRDs from the package's crds/) and reports
 * Deploying; SIGTERM stops it with status 0.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crdsDir } from '../../scripts/gen-crds';
import type { KubeVirt } from '../../src/api/generated/types';
import { KubeClient } from '../../src/controllers/runtime/kube/client';
import {
  CustomResourceDefinitionType,
  KubeVirtType,
  LeaseType,
  NamespaceType,
} from '../../src/controllers/runtime/resources';
import type { KubeObject } from '../../src/controllers/runtime/types';
import { DeploymentType } from '../../src/controllers/virt-operator/resource-types';
import { integration } from '../support/integration';
import {
  available,
  type ControlPlane,
  kubeBinDir,
  startControlPlane,
  unavailableReason,
} from '../support/kube';
import { waitFor } from '../support/wait';

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const kubectl = path.join(kubeBinDir, 'kubectl');
const entry = path.join(repoRoot, 'src', 'cli', 'kubevirt-ts.ts');
const run = integration(
  'virt-operator process against an API server',
  available() && existsSync(kubectl),
  available() ? `kubectl (${kubectl}) missing` : unavailableReason,
);
const NS = 'kubevirt';

describe.runIf(run)('kubevirt-ts virt-operator', () => {
  let cp: ControlPlane | undefined;
  let client: KubeClient;
  let child: ChildProcess | undefined;
  const log: string[] = [];

  beforeAll(async () => {
    cp = await startControlPlane({ controllerManager: false, scheduler: false });
    client = KubeClient.fromKubeconfig(cp.kubeconfigPath);
    const a = spawnSync(
      kubectl,
      ['--kubeconfig', cp.kubeconfigPath, 'apply', '-f', path.join(crdsDir, 'kubevirt.io_kubevirts.yaml')],
      { encoding: 'utf8' },
    );
    expect(a.status, a.stderr).toBe(0);
    await waitFor(
      'the KubeVirt CRD established',
      async () => {
        const c = await client.get<KubeObject>(CustomResourceDefinitionType, 'kubevirts.kubevirt.io');
        const conds = (c.status as { conditions?: { type: string; status: string }[] } | undefined)
          ?.conditions;
        return conds?.some((x) => x.type === 'Established' && x.status === 'True');
      },
      60_000,
      200,
    );
    await client.create(NamespaceType, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } });
  }, 180_000);

  afterAll(async () => {
    child?.kill('SIGKILL');
    await cp?.stop();
  });

  it('refuses a bad flag, naming it', () => {
    const r = spawnSync(
      process.execPath,
      ['--import', 'tsx', entry, 'virt-operator', '--image-pull-policy', 'Sometimes'],
      {
        encoding: 'utf8',
        cwd: repoRoot,
      },
    );
    expect(r.status).toBe(1);
    expect(r.stderr).toContain('--image-pull-policy: "Sometimes" is not Always, IfNotPresent or Never');
  });

  it('installs from the KubeVirt CR at its --image-tag and stops on SIGTERM', async () => {
    child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        entry,
        'virt-operator',
        '--kubeconfig',
        cp!.kubeconfigPath,
        '--namespace',
        NS,
        '--image-tag',
        't1',
      ],
      { cwd: repoRoot, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child.stderr?.on('data', (d: Buffer) => log.push(d.toString()));
    await client.create<KubeVirt & KubeObject>(KubeVirtType, {
      apiVersion: 'kubevirt.io/v1',
      kind: 'KubeVirt',
      metadata: { name: 'kubevirt', namespace: NS },
      spec: {},
    });
    const d = await waitFor(
      'virt-api Deployment',
      async () => client.get<KubeObject>(DeploymentType, 'virt-api', NS),
      90_000,
      250,
    );
    const image = (d.spec as { template: { spec: { containers: { image: string }[] } } }).template.spec
      .containers[0]!.image;
    expect(image).toBe('localhost/kubevirt-ts/kubevirt-ts:t1');
    await client.get(CustomResourceDefinitionType, 'virtualmachines.kubevirt.io');
    const kv = await waitFor(
      'Deploying',
      async () => {
        const k = await client.get<KubeVirt & KubeObject>(KubeVirtType, 'kubevirt', NS);
        return k.status?.phase === 'Deploying' ? k : undefined;
      },
      30_000,
      250,
    );
    expect(kv.status?.targetKubeVirtVersion).toBe('t1');
    const lease = await client.get<KubeObject & { spec: { holderIdentity?: string } }>(
      LeaseType,
      'virt-operator',
      NS,
    );
    // The operator's identity: its pod name (here the host's name) and pid, as upstream.
    expect(lease.spec.holderIdentity).toMatch(/^.+_\d+$/);
    const exited = new Promise<number | null>((r) => child!.once('exit', (code) => r(code)));
    child.kill('SIGTERM');
    expect(await exited, log.join('')).toBe(0);
    expect(log.join('')).toContain('leading: reconciling KubeVirt resources');
  }, 180_000);
});
