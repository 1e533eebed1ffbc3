/**
 * The install manifests: manifests/*.yaml are exactly what the component renderers give
 * (drift) and parse back into them, and what they hold: the namespace, the aggregated user
 * roles, every CRD of crds/, the operator manifest; the dev-cluster render (host network,
 * API server on 127.0.0.1) only when asked for; options that would make invalid objects
 * refused. What each component's objects hold: manifests-components.test.ts.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseAllDocuments } from 'yaml';
import { crdsDir } from '../../../scripts/gen-crds';
import { manifestFiles, manifestsDir } from '../../../scripts/gen-manifests';
import {
  defaultInstallOptions,
  renderInstall,
} from '../../../src/controllers/virt-operator/components/index';
import { byKind, type Obj, renderedManifests } from './manifests-fixtures';

describe('install manifests', () => {
  const { files, all } = renderedManifests();

  it('manifests/ is what scripts/gen-manifests.ts renders (run npm run gen:manifests after a change)', () => {
    const files = manifestFiles();
    expect(
      readdirSync(manifestsDir)
        .filter((f) => f.endsWith('.yaml'))
        .sort(),
    ).toEqual([...files.keys()].sort());
    for (const [name, text] of files)
      expect(readFileSync(path.join(manifestsDir, name), 'utf8'), name).toBe(text);
  });

  it('holds the namespace, every CRD of crds/, and the aggregated view/edit/admin roles', () => {
    expect(byKind(all, 'Namespace').map((n) => n.metadata.name)).toEqual(['kubevirt']);
    const crdFiles = readdirSync(crdsDir).filter((f) => f.endsWith('.yaml') && f !== 'all.yaml');
    // crds/ plus Multus's NetworkAttachmentDefinition and the three VolumeSnapshot CRDs.
    expect(byKind(all, 'CustomResourceDefinition')).toHaveLength(crdFiles.length + 1 + 3);
    expect(
      byKind(all, 'CustomResourceDefinition', 'network-attachment-definitions.k8s.cni.cncf.io'),
    ).toHaveLength(1);
    expect(byKind(all, 'CustomResourceDefinition', 'virtualmachines.kubevirt.io')).toHaveLength(1);
    const agg = byKind(all, 'ClusterRole').filter((r) => r.metadata.name.startsWith('kubevirt.io:'));
    expect(
      agg.map((r) => [
        r.metadata.name,
        Object.keys(r.metadata.labels).find((l) => l.includes('aggregate-to')),
      ]),
    ).toEqual([
      ['kubevirt.io:admin', 'rbac.authorization.k8s.io/aggregate-to-admin'],
      ['kubevirt.io:edit', 'rbac.authorization.k8s.io/aggregate-to-edit'],
      ['kubevirt.io:view', 'rbac.authorization.k8s.io/aggregate-to-view'],
    ]);
    const view = agg[2];
    expect(
      view.rules.every((r: Obj) => r.verbs.every((v: string) => ['get', 'list', 'watch'].includes(v))),
    ).toBe(true);
    const edit = agg[1];
    expect(edit.rules).toContainEqual({
      apiGroups: ['subresources.kubevirt.io'],
      resources: expect.arrayContaining(['virtualmachines/start', 'virtualmachines/stop']),
      verbs: ['update'],
    });
  });

  it('dev cluster render: host network and the API server on 127.0.0.1, never pulling', () => {
    const dev = Object.values(
      renderInstall(
        defaultInstallOptions({ devCluster: { apiServerPort: 6443 }, kubeletRootDir: '/tmp/k' }),
        crdsDir,
      ),
    ).flat() as Obj[];
    for (const w of [byKind(dev, 'Deployment')[0], byKind(dev, 'DaemonSet')[0]]) {
      const spec = w.spec.template.spec;
      expect(spec.hostNetwork).toBe(true);
      expect(spec.containers[0].imagePullPolicy).toBe('Never');
      expect(spec.containers[0].env).toContainEqual({ name: 'KUBERNETES_SERVICE_HOST', value: '127.0.0.1' });
      expect(spec.containers[0].env).toContainEqual({ name: 'KUBERNETES_SERVICE_PORT', value: '6443' });
    }
    // Two replicas on one host network cannot share a port: no health server there, and
    // the metrics port goes to whichever binds it first (the other retries).
    const ctl = byKind(dev, 'Deployment')[0].spec.template.spec.containers[0];
    expect(ctl.args.slice(ctl.args.indexOf('--port'), ctl.args.indexOf('--port') + 2)).toEqual([
      '--port',
      '0',
    ]);
    expect(ctl.args.slice(-2)).toEqual(['--metrics-listen-retry', '5']);
    // One metrics port per component on the node (virt-api holds 8443 there). The
    // controller declares none: the scheduler would take it as a host port and place one
    // replica per node.
    expect(ctl.ports).toBeUndefined();
    expect(ctl.args).toContain('0.0.0.0:8445');
    const h = byKind(dev, 'DaemonSet')[0].spec.template.spec.containers[0];
    expect(h.ports).toEqual([{ name: 'metrics', containerPort: 8444, protocol: 'TCP' }]);
    expect(h.args).toContain('0.0.0.0:8444');
    expect(h.readinessProbe.httpGet).toEqual({ scheme: 'HTTPS', port: 8444, path: '/readyz' });
    expect(byKind(dev, 'DaemonSet')[0].spec.template.spec.volumes[0].hostPath.path).toBe('/tmp/k/pods');
  });

  it('refuses options that would not make valid objects, naming the field', () => {
    expect(() => renderInstall(defaultInstallOptions({ namespace: 'Bad_NS' }), crdsDir)).toThrow(
      'install: namespace "Bad_NS" is not a DNS-1123 label',
    );
    expect(() => renderInstall(defaultInstallOptions({ kubeletRootDir: '/var/../etc' }), crdsDir)).toThrow(
      'kubeletRootDir "/var/../etc" is not a plain absolute path',
    );
  });

  it('every manifest file parses as YAML into the rendered objects', () => {
    for (const [name, text] of manifestFiles()) {
      const docs = parseAllDocuments(text).map((d) => d.toJS());
      expect(docs, name).toEqual(files[name]);
    }
  });

  it('the operator manifest: namespace, the KubeVirt CRD only, its RBAC and a two-replica Deployment of virt-operator', () => {
    const objs = files['kubevirt-ts-operator.yaml']!;
    expect(objs.map((o) => `${o.kind}/${o.metadata?.name}`)).toEqual([
      'Namespace/kubevirt',
      'CustomResourceDefinition/kubevirts.kubevirt.io',
      'ServiceAccount/kubevirt-operator',
      'ClusterRole/kubevirt-ts-kubevirt-operator',
      'ClusterRoleBinding/kubevirt-ts-kubevirt-operator',
      'Role/kubevirt-operator',
      'RoleBinding/kubevirt-operator',
      'Deployment/virt-operator',
    ]);
    const d = objs.at(-1)!.spec as {
      replicas: number;
      template: { spec: { serviceAccountName: string; containers: { command: string[]; args: string[] }[] } };
    };
    expect(d.replicas).toBe(2);
    expect(d.template.spec.serviceAccountName).toBe('kubevirt-operator');
    expect(d.template.spec.containers[0]!.command).toEqual(['kubevirt-ts', 'virt-operator']);
    expect(d.template.spec.containers[0]!.args).toEqual([
      '--namespace',
      'kubevirt',
      '--image-registry',
      'localhost/kubevirt-ts',
      '--image-tag',
      'latest',
      '--image-pull-policy',
      'IfNotPresent',
    ]);
  });
});
