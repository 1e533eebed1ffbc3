/**
 * The storage stack in the install (components/storage.ts, csi-driver.ts): the node
 * DaemonSet in csi-driver-host-path's distributed shape (the driver registering itself,
 * csi-provisioner and csi-snapshotter beside it in node mode), snapshot-controller
 * electing a leader with distributed snapshotting, the VolumeSnapshot CRDs as the
 * sidecars' build has them, the CSIDriver, the `kubevirt-ts-local` classes, least-privilege
 * RBAC; the pool's place and size as install options; and the operator's part: the kinds
 * it applies and the rights it needs to.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { crdsDir } from '../../../scripts/gen-crds';
import type { KubeObject } from '../../../src/controllers/runtime/types';
import {
  defaultInstallOptions,
  renderInstall,
} from '../../../src/controllers/virt-operator/components/index';
import {
  SNAPSHOT_CONTROLLER_FLAGS,
  storageObjects,
} from '../../../src/controllers/virt-operator/components/storage';
import { virtOperatorRules } from '../../../src/controllers/virt-operator/components/virt-operator';
import { typeOf } from '../../../src/controllers/virt-operator/resource-types';
import { cacheDir } from '../../support/integration';

// biome-ignore lint/suspicious/noExplicitAny: the test walks arbitrary Kubernetes objects
type Obj = Record<string, any>;
const byKind = (objs: Obj[], kind: string, name?: string) =>
  objs.filter((o) => o.kind === kind && (name === undefined || o.metadata?.name === name));

describe('the storage stack in the install', () => {
  const objs = storageObjects(defaultInstallOptions(), crdsDir) as Obj[];

  it('is the 40-storage.yaml file of the install, in the install namespace', () => {
    expect(renderInstall(defaultInstallOptions(), crdsDir)['40-storage.yaml']).toEqual(objs);
    for (const o of objs.filter((o) => o.metadata.namespace !== undefined))
      expect(o.metadata.namespace).toBe('kubevirt');
  });

  it('runs the driver and the node-mode sidecars in one privileged DaemonSet, from the kubevirt-ts image', () => {
    const [ds] = byKind(objs, 'DaemonSet', 'kubevirt-ts-csi-node');
    const spec = ds.spec.template.spec;
    expect(spec.containers.map((c: Obj) => c.name)).toEqual([
      'csi-driver',
      'csi-provisioner',
      'csi-snapshotter',
    ]);
    for (const c of spec.containers) expect(c.image).toBe('localhost/kubevirt-ts/kubevirt-ts:latest');
    const [driver, prov, snap] = spec.containers;
    expect(driver.securityContext).toEqual({ privileged: true });
    expect(driver.readinessProbe.exec.command).toEqual(['test', '-S', '/csi/csi.sock']);
    expect(driver.args).toEqual([
      'csi-driver',
      '--endpoint',
      'unix:///csi/csi.sock',
      '--node-id',
      '$(NODE_NAME)',
      '--pool-dir',
      '/var/lib/kubelet/plugins/csi.kubevirt-ts.io/pool',
      '--pool-image',
      '/var/lib/kubelet/plugins/csi.kubevirt-ts.io/pool.img',
      '--pool-size',
      '50Gi',
      '--registration-dir',
      '/var/lib/kubelet/plugins_registry',
      '--kubelet-registration-path',
      '/var/lib/kubelet/plugins/csi.kubevirt-ts.io/csi.sock',
    ]);
    expect(driver.env[0]).toEqual({
      name: 'NODE_NAME',
      valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } },
    });
    // Mounts it makes for the kubelet go back to the host; /dev for its loop devices.
    const mounts = Object.fromEntries(driver.volumeMounts.map((m: Obj) => [m.mountPath, m.mountPropagation]));
    expect(mounts).toEqual({
      '/csi': undefined,
      '/var/lib/kubelet/plugins': 'Bidirectional',
      '/var/lib/kubelet/pods': 'Bidirectional',
      '/var/lib/kubelet/plugins_registry': undefined,
      '/dev': undefined,
    });
    expect(spec.volumes.find((v: Obj) => v.name === 'socket-dir').hostPath).toEqual({
      path: '/var/lib/kubelet/plugins/csi.kubevirt-ts.io',
      type: 'DirectoryOrCreate',
    });
    expect(prov.command).toEqual(['/usr/bin/csi-provisioner']);
    expect(prov.args).toEqual(
      expect.arrayContaining([
        '--csi-address=/csi/csi.sock',
        '--node-deployment=true',
        '--strict-topology=true',
      ]),
    );
    expect(snap.command).toEqual(['/usr/bin/csi-snapshotter']);
    expect(snap.args).toContain('--node-deployment=true');
    // Node mode reads the node's name from NODE_NAME.
    for (const c of [prov, snap]) expect(c.env[0].name).toBe('NODE_NAME');
  });

  it('runs snapshot-controller electing a leader, labelling contents with their node', () => {
    const [d] = byKind(objs, 'Deployment', 'snapshot-controller');
    expect(d.spec.replicas).toBe(2);
    const c = d.spec.template.spec.containers[0];
    expect(c.command).toEqual(['/usr/bin/snapshot-controller']);
    expect(c.args).toEqual([
      '--v=2',
      '--leader-election=true',
      '--enable-distributed-snapshotting=true',
      // No group snapshots: else it polls 30 s for their CRDs before syncing any VolumeSnapshot.
      '--feature-gates=CSIVolumeGroupSnapshot=false',
      // kube-controller-manager's client rate: client-go's 5/10 throttled one snapshot's requests.
      '--kube-api-qps=20',
      '--kube-api-burst=30',
    ]);
    const dev = storageObjects(
      defaultInstallOptions({ devCluster: { apiServerPort: 6443 } }),
      crdsDir,
    ) as Obj[];
    expect(byKind(dev, 'Deployment', 'snapshot-controller')[0].spec.replicas).toBe(1);
  });

  it('installs the VolumeSnapshot CRDs, the CSIDriver and the default virt StorageClass and VolumeSnapshotClass', () => {
    expect(byKind(objs, 'CustomResourceDefinition').map((c) => c.metadata.name)).toEqual([
      'volumesnapshotclasses.snapshot.storage.k8s.io',
      'volumesnapshotcontents.snapshot.storage.k8s.io',
      'volumesnapshots.snapshot.storage.k8s.io',
    ]);
    expect(byKind(objs, 'CSIDriver', 'csi.kubevirt-ts.io')[0].spec.attachRequired).toBe(false);
    const [sc] = byKind(objs, 'StorageClass', 'kubevirt-ts-local');
    expect(sc.metadata.annotations).toEqual({ 'storageclass.kubevirt.io/is-default-virt-class': 'true' });
    expect(sc).toMatchObject({
      provisioner: 'csi.kubevirt-ts.io',
      volumeBindingMode: 'WaitForFirstConsumer',
    });
    expect(byKind(objs, 'VolumeSnapshotClass', 'kubevirt-ts-local')[0].driver).toBe('csi.kubevirt-ts.io');
  });

  it('gives snapshot-controller flags its build accepts (an unknown feature gate is fatal at its start)', () => {
    const bin = join(cacheDir, 'csi-sidecars', 'current', 'bin', 'snapshot-controller');
    if (!existsSync(bin)) return; // no sidecar build on this machine: nothing to run
    // Flags are parsed, feature gates set, then --version prints and exits 0.
    expect(execFileSync(bin, [...SNAPSHOT_CONTROLLER_FLAGS, '--version'], { encoding: 'utf8' })).toMatch(
      /snapshot-controller v8\./,
    );
    expect(() =>
      execFileSync(bin, ['--feature-gates=NoSuchGate=false', '--version'], { stdio: 'pipe' }),
    ).toThrow(/unrecognized feature gate: NoSuchGate/);
  });

  it("has the CRDs of the sidecars' build (scripts/csi/build-sidecars.sh), byte for byte", () => {
    const built = join(cacheDir, 'csi-sidecars', 'current', 'crd');
    if (!existsSync(built)) return; // no sidecar build on this machine: nothing to compare with
    const ours = join(crdsDir, 'external-snapshotter');
    const names = readdirSync(built)
      .filter((f) => f.endsWith('.yaml'))
      .sort();
    expect(readdirSync(ours).sort()).toEqual(names);
    for (const f of names)
      expect(readFileSync(join(ours, f), 'utf8'), f).toBe(readFileSync(join(built, f), 'utf8'));
  });

  it('binds each ServiceAccount to rules of the sidecars, no wildcard', () => {
    for (const name of ['kubevirt-ts-csi-node', 'snapshot-controller']) {
      expect(byKind(objs, 'ServiceAccount', name)).toHaveLength(1);
      const [role] = byKind(objs, 'ClusterRole', `kubevirt-ts-${name}`);
      for (const r of role.rules) {
        expect(r.verbs).not.toContain('*');
        expect(r.resources).not.toContain('*');
      }
      expect(byKind(objs, 'ClusterRoleBinding', `kubevirt-ts-${name}`)[0].subjects).toEqual([
        { kind: 'ServiceAccount', name, namespace: 'kubevirt' },
      ]);
    }
    const node = byKind(objs, 'ClusterRole', 'kubevirt-ts-kubevirt-ts-csi-node')[0].rules as Obj[];
    expect(node).toContainEqual({
      apiGroups: [''],
      resources: ['persistentvolumes'],
      verbs: ['get', 'list', 'watch', 'create', 'patch', 'delete'],
    });
  });

  it('takes the pool place and size as install options, refusing bad ones by name', () => {
    const o = defaultInstallOptions({ csiPoolDir: '/srv/kvts/pool', csiPoolSize: '200Gi' });
    const [ds] = byKind(storageObjects(o, crdsDir) as Obj[], 'DaemonSet');
    const driver = ds.spec.template.spec.containers[0];
    expect(driver.args.slice(5, 11)).toEqual([
      '--pool-dir',
      '/srv/kvts/pool',
      '--pool-image',
      '/srv/kvts/pool.img',
      '--pool-size',
      '200Gi',
    ]);
    expect(driver.volumeMounts).toContainEqual({
      name: 'pool-dir',
      mountPath: '/srv/kvts',
      mountPropagation: 'Bidirectional',
    });
    expect(() => renderInstall(defaultInstallOptions({ csiPoolDir: '/pool' }), crdsDir)).toThrow(
      'install: csiPoolDir "/pool" is not a plain absolute path below a directory',
    );
    expect(() => renderInstall(defaultInstallOptions({ csiPoolSize: '10G' }), crdsDir)).toThrow(
      'install: csiPoolSize "10G" is not a size in Mi, Gi or Ti',
    );
  });

  it('is applied by the operator, which may create every kind of it', () => {
    const may = (group: string, resource: string) =>
      virtOperatorRules.some(
        (r) => r.apiGroups.includes(group) && r.resources.includes(resource) && r.verbs.includes('create'),
      );
    for (const o of objs as KubeObject[]) {
      const t = typeOf(o);
      expect(may(t.group, t.plural), `${o.kind} ${o.metadata?.name}`).toBe(true);
    }
  });
});
