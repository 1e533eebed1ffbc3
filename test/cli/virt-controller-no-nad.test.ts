/**
 * virt-controller on an API server that does not serve NetworkAttachmentDefinitions (no
 * Multus CRD: its own control plane, since the run's shared one has it). The shipped
 * process starts and becomes ready instead of waiting for a cache that never syncs, says
 * once why it does not watch the kind, renders pods for VMIs without multus networks, and
 * gives a VMI naming a definition the missing-NAD condition and no pod (upstream's render
 * error). In process, with a short recheck: once the CRD and the definition are created,
 * the controller starts watching and the waiting VMI gets its pod with the networks
 * annotation.
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { crdsDir } from '../../scripts/gen-crds';
import { createClusterConfig } from '../../src/api/config/cluster-config';
import type { VirtualMachineInstance } from '../../src/api/generated/types';
import type { Pod } from '../../src/controllers/common/pod';
import { VmiResource } from '../../src/controllers/common/vmi-resource';
import { KubeClient } from '../../src/controllers/runtime/kube/client';
import { NetworkAttachmentDefinitionType, PodType } from '../../src/controllers/runtime/resources';
import type { KubeObject } from '../../src/controllers/runtime/types';
import { VirtController } from '../../src/controllers/virt-controller/virt-controller';
import { networkAttachmentDefinitionCrd } from '../../src/controllers/virt-operator/components/nad-crd';
import { freePort } from '../support/free-port';
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
const run = integration('virt-controller without the NAD CRD', available(), unavailableReason);
const NS = 'no-nad';
const MISSING = `failed to render launch manifest: failed to locate network attachment definition ${NS}/blue-net`;

const vmi = (name: string, multus: boolean) =>
  ({
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: { name, namespace: NS },
    spec: {
      domain: {
        devices: multus
          ? {
              interfaces: [
                { name: 'default', masquerade: {} },
                { name: 'blue', bridge: {} },
              ],
            }
          : { autoattachPodInterface: false },
        resources: { requests: { memory: '128Mi' } },
      },
      ...(multus
        ? {
            networks: [
              { name: 'default', pod: {} },
              { name: 'blue', multus: { networkName: 'blue-net' } },
            ],
          }
        : {}),
    },
  }) as KubeObject;

describe.runIf(run)('virt-controller where NetworkAttachmentDefinitions are not served', () => {
  let cp: ControlPlane;
  let client: KubeClient;
  let child: ChildProcess | undefined;
  let ctrl: VirtController | undefined;
  const log: string[] = [];
  const apply = (input: string) => {
    const r = spawnSync(kubectl, ['--kubeconfig', cp.kubeconfigPath, 'apply', '-f', '-'], {
      encoding: 'utf8',
      input,
    });
    expect(r.status, r.stderr).toBe(0);
  };
  const launcherPods = async (vmiName: string) => {
    const v = await client.get<VirtualMachineInstance & KubeObject>(VmiResource, vmiName, NS);
    return (await client.list<Pod>(PodType, { namespace: NS })).items.filter(
      (p) => p.metadata?.labels?.['kubevirt.io/created-by'] === v.metadata?.uid,
    );
  };
  const synchronized = async (vmiName: string) =>
    (
      await client.get<VirtualMachineInstance & KubeObject>(VmiResource, vmiName, NS)
    ).status?.conditions?.find((c) => c.type === 'Synchronized');

  beforeAll(async () => {
    cp = await startControlPlane({ controllerManager: false, scheduler: false });
    const crds = spawnSync(kubectl, ['--kubeconfig', cp.kubeconfigPath, 'apply', '-f', crdsDir], {
      encoding: 'utf8',
    });
    expect(crds.status, crds.stderr).toBe(0);
    apply(stringify({ apiVersion: 'v1', kind: 'Namespace', metadata: { name: NS } }));
    client = KubeClient.fromKubeconfig(cp.kubeconfigPath);
  }, 180_000);

  afterAll(async () => {
    child?.kill('SIGKILL');
    await ctrl?.stop();
    client?.close();
    await cp?.stop();
  });

  it('the process starts and is ready, says so once, and a VMI naming a definition gets the missing-NAD condition', async () => {
    const served = await client.list(NetworkAttachmentDefinitionType).then(
      () => true,
      () => false,
    );
    expect(served, 'the kind must not be served here').toBe(false);
    const metrics = await freePort();
    child = spawn(
      process.execPath,
      [
        '--import',
        'tsx',
        entry,
        'virt-controller',
        '--kubeconfig',
        cp.kubeconfigPath,
        '--launcher-image',
        'localhost/kubevirt-ts/virt-launcher:test',
        '--kubevirt-namespace',
        NS,
        '--no-leader-elect',
        '--port',
        String(await freePort()),
        '--listen-address',
        '127.0.0.1',
        '--metrics-listen',
        `127.0.0.1:${metrics}`,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    child.stderr?.on('data', (d) => log.push(String(d)));
    // Ready means every informer's cache synced: it never was with a NAD informer here.
    await waitFor(
      '/readyz 200',
      async () => (await fetch(`http://127.0.0.1:${metrics}/readyz`).catch(() => undefined))?.status === 200,
      90_000,
      250,
    );
    await client.create(VmiResource, vmi('plain', false));
    await client.create(VmiResource, vmi('multi', true));
    const pods = await waitFor(
      'the launcher pod of the VMI without multus networks',
      async () => {
        const p = await launcherPods('plain');
        return p.length === 1 ? p : undefined;
      },
      60_000,
      250,
    );
    expect(pods[0].spec?.containers[0].image).toBe('localhost/kubevirt-ts/virt-launcher:test');
    const cond = await waitFor('Synchronized=False on multi', () => synchronized('multi'), 60_000, 250);
    expect(cond).toMatchObject({ status: 'False', reason: 'FailedCreate', message: MISSING });
    expect(await launcherPods('multi')).toEqual([]);
    const lines = log
      .join('')
      .split('\n')
      .filter((l) => l.includes('NetworkAttachmentDefinition is not served'));
    expect(lines).toHaveLength(1);
    expect(JSON.parse(lines[0])).toMatchObject({
      component: 'virt-controller',
      msg: 'k8s.cni.cncf.io/v1 NetworkAttachmentDefinition is not served (its CRD is not installed): VMIs with multus networks get no pod until it is; checking again every 30 s',
    });
    child.kill('SIGKILL');
    child = undefined;
  }, 180_000);

  it('starts watching once the CRD is installed: the waiting VMI gets its pod with the networks annotation', async () => {
    const lines: string[] = [];
    ctrl = new VirtController({
      client,
      config: createClusterConfig({}, { hostArchitecture: 'amd64' }),
      launcher: { launcherImage: 'kubevirt-ts/launcher:test' },
      namespace: NS,
      networkAttachments: true,
      networkAttachmentRecheckMs: 300,
      log: (l) => lines.push(l),
      onError: () => undefined,
    });
    await ctrl.start();
    expect(lines).toHaveLength(1);
    // Still no pod for multi: the definition is still missing (and its kind unserved).
    await client.create(VmiResource, vmi('multi2', true));
    const cond = await waitFor('Synchronized=False on multi2', () => synchronized('multi2'), 60_000, 250);
    expect(cond).toMatchObject({ reason: 'FailedCreate', message: MISSING });
    apply(stringify(networkAttachmentDefinitionCrd()));
    await waitFor(
      'the kind served',
      () => client.list(NetworkAttachmentDefinitionType).then(() => true),
      60_000,
      250,
    );
    await client.create(NetworkAttachmentDefinitionType, {
      apiVersion: 'k8s.cni.cncf.io/v1',
      kind: 'NetworkAttachmentDefinition',
      metadata: { name: 'blue-net', namespace: NS },
      spec: {
        config: JSON.stringify({ cniVersion: '0.3.1', name: 'blue-net', type: 'bridge', bridge: 'x0' }),
      },
    } as KubeObject);
    for (const name of ['multi', 'multi2']) {
      const pods = await waitFor(
        `the launcher pod of ${name}`,
        async () => {
          const p = await launcherPods(name);
          return p.length === 1 ? p : undefined;
        },
        60_000,
        250,
      );
      expect(JSON.parse(pods[0].metadata?.annotations?.['k8s.v1.cni.cncf.io/networks'] ?? 'null')).toEqual([
        { name: 'blue-net', namespace: NS, interface: 'pod16477688c0e' },
      ]);
    }
  }, 180_000);
});
