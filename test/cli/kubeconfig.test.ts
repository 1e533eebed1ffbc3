/**
 * The CLI against a real kube-apiserver with `--kubeconfig`: get lists VMs in kubectl's
 * columns; start, stop and restart patch the VM (the fallback for clusters that do not
 * serve KubeVirt's subresource API); pause names the missing subresources API.
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crdsDir } from '../../scripts/gen-crds';
import { VmiResource } from '../../src/controllers/common/vmi-resource';
import { KubeClient } from '../../src/controllers/runtime/kube/client';
import { NamespaceType, VirtualMachineType } from '../../src/controllers/runtime/resources';
import type { KubeObject } from '../../src/controllers/runtime/types';
import { integration } from '../support/integration';
import {
  available,
  type ControlPlaneAccess,
  kubeBinDir,
  sharedControlPlane,
  unavailableReason,
} from '../support/kube';

const repoRoot = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../..');
const kubectl = path.join(kubeBinDir, 'kubectl');
const run = integration('CLI with --kubeconfig', available(), unavailableReason);

describe.runIf(run)('CLI against a real API server', () => {
  let cp: ControlPlaneAccess;
  let client: KubeClient;
  const ns = `cli-kube-${process.pid}`;
  // Through tsx from the sources: nothing here needs the build.
  const cli = (...args: string[]) => {
    const r = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        path.join(repoRoot, 'src/cli/kubevirt-ts.ts'),
        ...args,
        '--kubeconfig',
        cp.kubeconfigPath,
        '-n',
        ns,
      ],
      { encoding: 'utf8', timeout: 60_000, cwd: repoRoot },
    );
    return { code: r.status, out: r.stdout, err: r.stderr };
  };
  const vm = () =>
    client.get<KubeObject & { spec: { runStrategy?: string }; status?: { stateChangeRequests?: unknown } }>(
      VirtualMachineType,
      'v1',
      ns,
    );

  beforeAll(async () => {
    cp = await sharedControlPlane();
    const applied = spawnSync(kubectl, ['--kubeconfig', cp.kubeconfigPath, 'apply', '-f', crdsDir], {
      encoding: 'utf8',
    });
    expect(applied.status, applied.stderr).toBe(0);
    const waited = spawnSync(
      kubectl,
      [
        '--kubeconfig',
        cp.kubeconfigPath,
        'wait',
        '--for=condition=Established',
        '--timeout=60s',
        'crd/virtualmachines.kubevirt.io',
        'crd/virtualmachineinstances.kubevirt.io',
      ],
      { encoding: 'utf8' },
    );
    expect(waited.status, waited.stderr).toBe(0);
    client = KubeClient.fromKubeconfig(cp.kubeconfigPath);
    await client.create(NamespaceType, { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
    await client.create(VirtualMachineType, {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachine',
      metadata: { name: 'v1', namespace: ns },
      spec: { runStrategy: 'Halted', template: { spec: { domain: { devices: {} } } } },
    } as KubeObject);
  }, 180_000);

  afterAll(async () => {
    await client?.delete(NamespaceType, ns).catch(() => undefined);
    client?.close();
  });

  it('get vms prints the VM in kubectl columns', () => {
    const r = cli('get', 'vms');
    expect(r.err).toBe('');
    expect(r.out).toMatch(/^NAME\s+AGE\s+STATUS\s+READY\nv1\s+\d+s\s+Stopped\s+False\n$/);
  }, 60_000);

  it('start and stop patch runStrategy; restart asks Stop(uid) then Start', async () => {
    expect(cli('virtctl', 'start', 'v1').out).toBe('VM v1 was scheduled to start\n');
    expect((await vm()).spec.runStrategy).toBe('Always');
    // No controller runs here: make the VMI a controller would have made.
    const vmi = await client.create(VmiResource, {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachineInstance',
      metadata: { name: 'v1', namespace: ns },
      spec: { domain: { devices: {} } },
    } as KubeObject);
    expect(cli('virtctl', 'restart', 'v1').code).toBe(0);
    expect((await vm()).status?.stateChangeRequests).toEqual([
      { action: 'Stop', uid: vmi.metadata?.uid },
      { action: 'Start' },
    ]);
    expect(cli('virtctl', 'stop', 'v1').out).toBe('VM v1 was scheduled to stop\n');
    expect((await vm()).spec.runStrategy).toBe('Halted');
  }, 60_000);

  it('pause says the cluster does not serve the subresources API', () => {
    const r = cli('virtctl', 'pause', 'vmi', 'v1');
    expect(r.code).toBe(1);
    expect(r.err).toContain('pause: the cluster does not serve subresources.kubevirt.io');
  }, 60_000);
});
