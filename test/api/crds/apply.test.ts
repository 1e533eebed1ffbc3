/**
 * The generated CRDs on a real kube-apiserver: `kubectl apply -f crds/` (client-side, so
 * the size budget matters), then every KubeVirt object among the fixture manifests (and
 * upstream's examples, where present) created with strict server-side field validation
 * (an unknown or pruned field fails), plus short names, printer columns, embedded-metadata preservation and the scale subresource.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { crdsDir } from '../../../scripts/gen-crds';
import { kinds } from '../../../src/api/groups';
import { loadManifests } from '../../../src/api/manifest';
import { fixtureFiles, fixturesDir } from '../../support/fixtures';
import { apiserverTestsEnabled, type ControlPlane, kubectlPath, startControlPlane } from '../../support/kube';
import { describeUpstream } from '../../support/upstream';

const run = apiserverTestsEnabled('kube-apiserver (CRD apply)');
const ns = 'crd-fixtures';

describe.skipIf(!run)('CRDs on a real kube-apiserver', () => {
  let kubeconfig = '';
  const kubectl = (args: string[], input?: string) => {
    const r = spawnSync(kubectlPath, ['--kubeconfig', kubeconfig, ...args], {
      input,
      encoding: 'utf8',
      timeout: 120_000,
      maxBuffer: 256 * 1024 * 1024,
    });
    return { status: r.status, stdout: r.stdout, stderr: r.stderr };
  };

  let controlPlane: ControlPlane | undefined;

  beforeAll(async () => {
    // Its own API server, not the shared one: this is `kubectl apply` onto a cluster
    // without the CRDs, as a user does it; another test file installs them its own way.
    controlPlane = await startControlPlane({ controllerManager: false, scheduler: false });
    kubeconfig = controlPlane.kubeconfigPath;
    const applied = kubectl(['apply', '-f', crdsDir]);
    expect(applied.stderr).toBe('');
    expect(applied.status).toBe(0);
    const names = kinds.map((k) => `crd/${k.plural}.${k.group}`);
    const waited = kubectl(['wait', '--for=condition=Established', '--timeout=60s', ...names]);
    expect(waited.stderr).toBe('');
    execFileSync(kubectlPath, ['--kubeconfig', kubeconfig, 'create', 'namespace', ns]);
  });

  afterAll(async () => {
    await controlPlane?.stop();
  });

  it('accepts every CRD with its names, versions and no structural-schema complaint', () => {
    const r = kubectl(['get', 'crd', '-o', 'json']);
    const crds = JSON.parse(r.stdout).items as {
      metadata: { name: string };
      status: {
        conditions: { type: string; status: string; reason: string }[];
        acceptedNames: { shortNames?: string[] };
      };
    }[];
    for (const k of kinds) {
      const crd = crds.find((c) => c.metadata.name === `${k.plural}.${k.group}`);
      expect(crd, k.plural).toBeDefined();
      const cond = Object.fromEntries(crd!.status.conditions.map((c) => [c.type, c.status]));
      expect(cond.Established, k.plural).toBe('True');
      expect(cond.NonStructuralSchema, k.plural).toBeUndefined();
      expect(crd!.status.acceptedNames.shortNames ?? [], k.plural).toEqual([...k.shortNames]);
    }
  });

  /** The KubeVirt objects of a folder of manifests, as one v1 List. */
  const listOf = (dir: string): unknown[] => {
    const items: unknown[] = [];
    const seen = new Set<string>();
    for (const f of fixtureFiles(dir)) {
      const r = loadManifests(readFileSync(path.join(dir, f), 'utf8'), { filename: f });
      for (const o of r.objects) {
        if (!o.known) continue;
        // Upstream's examples share a VMI name: keep both by renaming the second.
        const meta = o.object.metadata!;
        while (seen.has(`${o.kind}/${meta.name}`)) meta.name = `${meta.name}-2`;
        seen.add(`${o.kind}/${meta.name}`);
        items.push(o.object);
      }
    }
    return items;
  };

  /** Creates every object of a folder in a namespace with strict field validation. */
  const createAll = (dir: string, namespace: string, count: number) => {
    const items = listOf(dir);
    expect(items).toHaveLength(count);
    const r = kubectl(
      ['create', '-n', namespace, '--validate=strict', '-o', 'name', '-f', '-'],
      JSON.stringify({ apiVersion: 'v1', kind: 'List', items }),
    );
    // The one warning is upstream's own deprecation of presets (the CRD's deprecationWarning).
    expect(r.stderr).toBe(
      'Warning: kubevirt.io/v1 VirtualMachineInstancePresets is now deprecated and will be removed in v2.\n',
    );
    expect(r.status).toBe(0);
    expect(r.stdout.trim().split('\n')).toHaveLength(count);
  };

  it('creates all 45 KubeVirt objects of the fixture manifests with strict field validation', () => {
    createAll(fixturesDir, ns, 45);
  });

  it('keeps embedded template metadata (labels) instead of pruning it', () => {
    const r = kubectl([
      'get',
      '-n',
      ns,
      'vm',
      'vm-containerdisk',
      '-o',
      'jsonpath={.spec.template.metadata.labels}',
    ]);
    expect(JSON.parse(r.stdout)).toEqual({ 'kubevirt.io/vm': 'vm-containerdisk' });
  });

  it('serves short names and upstream printer columns', () => {
    const r = kubectl(['get', '-n', ns, 'vmis']);
    expect(r.stdout.split('\n')[0].split(/\s+/).filter(Boolean)).toEqual([
      'NAME',
      'AGE',
      'PHASE',
      'IP',
      'NODENAME',
      'READY',
    ]);
    const vm = kubectl(['get', '-n', ns, 'vm', 'vm-containerdisk']);
    expect(vm.stdout.split('\n')[0].split(/\s+/).filter(Boolean)).toEqual(['NAME', 'AGE', 'STATUS', 'READY']);
  });

  it('rejects an unknown field under strict validation, naming its path', () => {
    const vm = {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachine',
      metadata: { name: 'unknown-field' },
      spec: { template: { spec: { domain: { devices: { diskz: [] } } } } },
    };
    const r = kubectl(['create', '-n', ns, '--validate=strict', '-f', '-'], JSON.stringify(vm));
    expect(r.status).not.toBe(0);
    expect(r.stderr).toContain('unknown field "spec.template.spec.domain.devices.diskz"');
  });

  it('scales a VirtualMachineInstanceReplicaSet through the scale subresource', () => {
    const name = kubectl(['get', '-n', ns, 'vmirs', '-o', 'jsonpath={.items[0].metadata.name}']).stdout;
    expect(name).not.toBe('');
    const scaled = kubectl(['scale', '-n', ns, 'vmirs', name, '--replicas=5']);
    expect(scaled.stderr).toBe('');
    const r = kubectl(['get', '-n', ns, 'vmirs', name, '-o', 'jsonpath={.spec.replicas}']);
    expect(r.stdout).toBe('5');
  });

  describeUpstream('upstream examples on the API server', (upstream) => {
    it('creates all 44 KubeVirt objects of the upstream examples with strict field validation', () => {
      execFileSync(kubectlPath, ['--kubeconfig', kubeconfig, 'create', 'namespace', 'crd-upstream-examples']);
      createAll(upstream.examplesDir, 'crd-upstream-examples', 44);
    });
  });
});
