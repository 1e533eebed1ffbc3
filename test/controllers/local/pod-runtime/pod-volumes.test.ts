/**
 * The local pod runtime's volumes (kubelet role) on the embedded store: configMap, secret,
 * downwardAPI and projected volumes written in kubelet's atomic-writer layout with its file
 * modes; keys and item paths that are not safe file names rejected with the field path;
 * hostPath types; PVCs resolved through their bound hostPath PV; subPath mounts and mounts
 * nested in an emptyDir; removing the pod leaves a hostPath's files alone.
 */
import {
  existsSync,
  lstatSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  readlinkSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { Pod, PodVolume } from '../../../../src/controllers/common/pod';
import {
  podDir,
  preparePodDirs,
  removePodDirs,
} from '../../../../src/controllers/local/pod-runtime/pod-dirs';
import { PodRuntime } from '../../../../src/controllers/local/pod-runtime/pod-runtime';
import {
  materializeVolume,
  payloadPathProblem,
} from '../../../../src/controllers/local/pod-runtime/pod-volumes';
import { EmbeddedStore } from '../../../../src/controllers/runtime/embedded/store';
import {
  ConfigMapType,
  EventType,
  PersistentVolumeClaimType,
  PersistentVolumeType,
  PodType,
  SecretType,
} from '../../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../../src/controllers/runtime/types';
import { waitFor } from '../../../support/wait';

const mode = (p: string) => statSync(p).mode & 0o777;

function pod(
  volumes: PodVolume[],
  mounts: NonNullable<Pod['spec']>['containers'][0]['volumeMounts'] = [],
): Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name: 'virt-launcher-vm1-abcde',
      namespace: 'ns1',
      uid: 'pod-uid-1',
      labels: { 'kubevirt.io': 'virt-launcher', app: 'say "hi"\n' },
      annotations: { 'kubevirt.io/domain': 'vm1' },
    },
    spec: {
      nodeName: 'node1',
      containers: [{ name: 'compute', image: 'x', volumeMounts: mounts }],
      volumes,
    },
  };
}

describe('pod volumes (kubelet role)', () => {
  let store: EmbeddedStore;
  let root: string;
  let dir: string;

  beforeEach(async () => {
    store = await EmbeddedStore.open();
    await store
      .create(
        { group: '', version: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false },
        {
          metadata: { name: 'ns1' },
        },
      )
      .catch(() => undefined);
    root = mkdtempSync(join(tmpdir(), 'kvts-podvol-'));
    dir = podDir(root, 'pod-uid-1');
    mkdirSync(dir, { recursive: true });
  });
  afterEach(() => rmSync(root, { recursive: true, force: true }));

  it('writes a configMap in the atomic-writer layout with mode 0644, binaryData decoded', async () => {
    await store.create(ConfigMapType, {
      metadata: { name: 'app', namespace: 'ns1' },
      data: { 'app.conf': 'port=80\n', 'x.json': '{}' },
      binaryData: { blob: Buffer.from([0, 1, 2, 255]).toString('base64') },
    } as KubeObject);
    const p = pod([{ name: 'cfg', configMap: { name: 'app' } }]);
    const m = await materializeVolume(store, dir, p, p.spec!.volumes![0], 0);
    const vdir = join(dir, 'volumes', 'kubernetes.io~configmap', 'cfg');
    expect(m).toEqual({ hostPath: vdir });
    expect(readFileSync(join(vdir, 'app.conf'), 'utf8')).toBe('port=80\n');
    expect([...readFileSync(join(vdir, 'blob'))]).toEqual([0, 1, 2, 255]);
    // key -> ..data/key, ..data -> ..<timestamp>
    expect(readlinkSync(join(vdir, 'app.conf'))).toBe('..data/app.conf');
    expect(readlinkSync(join(vdir, '..data'))).toMatch(/^\.\.\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d\.[0-9a-f]+$/);
    expect(mode(join(vdir, 'app.conf'))).toBe(0o644);
  });

  it('applies items, item modes and defaultMode of a secret (data base64-decoded)', async () => {
    await store.create(SecretType, {
      metadata: { name: 'creds', namespace: 'ns1' },
      data: { user: Buffer.from('admin').toString('base64'), pass: Buffer.from('s3cret').toString('base64') },
    } as KubeObject);
    const p = pod([
      {
        name: 'sec',
        secret: {
          secretName: 'creds',
          defaultMode: 0o400,
          items: [
            { key: 'user', path: 'login/name' },
            { key: 'pass', path: 'pw', mode: 0o600 },
          ],
        },
      },
    ]);
    const m = await materializeVolume(store, dir, p, p.spec!.volumes![0], 0);
    expect(readFileSync(join(m!.hostPath, 'login', 'name'), 'utf8')).toBe('admin');
    expect(mode(join(m!.hostPath, 'login', 'name'))).toBe(0o400);
    expect(readFileSync(join(m!.hostPath, 'pw'), 'utf8')).toBe('s3cret');
    expect(mode(join(m!.hostPath, 'pw'))).toBe(0o600);
    expect(existsSync(join(m!.hostPath, 'user'))).toBe(false);
  });

  it('rejects keys and item paths that are not safe file names, naming the field and escaping the key', async () => {
    await store.create(ConfigMapType, {
      metadata: { name: 'bad', namespace: 'ns1' },
      data: { 'evil\nname': 'x' },
    } as KubeObject);
    const p = pod([{ name: 'cfg', configMap: { name: 'bad' } }]);
    await expect(materializeVolume(store, dir, p, p.spec!.volumes![0], 0)).rejects.toThrow(
      'spec.volumes[0].configMap: key "evil\\nname" cannot be a file name',
    );
    await store.create(ConfigMapType, {
      metadata: { name: 'ok', namespace: 'ns1' },
      data: { a: '1' },
    } as KubeObject);
    const q = pod([
      { name: 'cfg', configMap: { name: 'ok', items: [{ key: 'a', path: '../../etc/passwd' }] } },
    ]);
    await expect(materializeVolume(store, dir, q, q.spec!.volumes![0], 0)).rejects.toThrow(
      /spec\.volumes\[0\]\.configMap\.items\[0\]\.path: "\.\.\/\.\.\/etc\/passwd" must not contain/,
    );
    expect(payloadPathProblem('..data')).toMatch(/must not start with/);
    expect(payloadPathProblem('/abs')).toMatch(/relative/);
    expect(payloadPathProblem('a b')).toMatch(/may only contain/);
    expect(payloadPathProblem('dir/file.txt')).toBeUndefined();
  });

  it('fails clearly for a missing configMap, and writes an empty volume when it is optional', async () => {
    const p = pod([
      { name: 'cfg', configMap: { name: 'nope' } },
      { name: 'opt', configMap: { name: 'nope', optional: true } },
    ]);
    await expect(materializeVolume(store, dir, p, p.spec!.volumes![0], 0)).rejects.toThrow(
      'spec.volumes[0].configMap: configmap "ns1/nope" not found',
    );
    const m = await materializeVolume(store, dir, p, p.spec!.volumes![1], 1);
    expect(existsSync(join(m!.hostPath, '..data'))).toBe(true);
  });

  it('projects pod fields through downwardAPI like kubelet (sorted key="value" lines)', async () => {
    const p = pod([
      {
        name: 'dapi',
        downwardAPI: {
          items: [
            { path: 'labels', fieldRef: { fieldPath: 'metadata.labels' } },
            { path: 'name', fieldRef: { fieldPath: 'metadata.name' } },
            { path: 'domain', fieldRef: { fieldPath: "metadata.annotations['kubevirt.io/domain']" } },
          ],
        },
      },
      { name: 'bad', downwardAPI: { items: [{ path: 'x', fieldRef: { fieldPath: 'status.podIP' } }] } },
    ]);
    const m = await materializeVolume(store, dir, p, p.spec!.volumes![0], 0);
    expect(readFileSync(join(m!.hostPath, 'labels'), 'utf8')).toBe(
      'app="say \\"hi\\"\\n"\nkubevirt.io="virt-launcher"',
    );
    expect(readFileSync(join(m!.hostPath, 'name'), 'utf8')).toBe('virt-launcher-vm1-abcde');
    expect(readFileSync(join(m!.hostPath, 'domain'), 'utf8')).toBe('vm1');
    expect(m!.hostPath).toBe(join(dir, 'volumes', 'kubernetes.io~downward-api', 'dapi'));
    await expect(materializeVolume(store, dir, p, p.spec!.volumes![1], 1)).rejects.toThrow(
      /spec\.volumes\[1\]\.downwardAPI\.items\[0\]\.fieldRef\.fieldPath: "status\.podIP" is not a field/,
    );
  });

  it('checks and creates hostPath volumes by type and rejects unsafe paths', async () => {
    const made = join(root, 'host', 'new', 'dir');
    const p = pod([
      { name: 'a', hostPath: { path: made, type: 'DirectoryOrCreate' } },
      { name: 'b', hostPath: { path: join(root, 'missing'), type: 'Directory' } },
      { name: 'c', hostPath: { path: `${root}/x/../y`, type: 'DirectoryOrCreate' } },
      { name: 'd', hostPath: { path: `${root}/a\u0007b` } },
    ]);
    expect(await materializeVolume(store, dir, p, p.spec!.volumes![0], 0)).toEqual({ hostPath: made });
    expect(statSync(made).isDirectory()).toBe(true);
    await expect(materializeVolume(store, dir, p, p.spec!.volumes![1], 1)).rejects.toThrow(
      `spec.volumes[1].hostPath: "${join(root, 'missing')}" is not an existing directory`,
    );
    await expect(materializeVolume(store, dir, p, p.spec!.volumes![2], 2)).rejects.toThrow(
      /spec\.volumes\[2\]\.hostPath\.path: .* must not contain "\." or "\.\." segments/,
    );
    await expect(materializeVolume(store, dir, p, p.spec!.volumes![3], 3)).rejects.toThrow(
      /spec\.volumes\[3\]\.hostPath\.path: ".*\\u0007b" must not contain control characters/,
    );
  });

  it('resolves a PVC bound to a hostPath PV, and names an unbound or foreign one', async () => {
    const pvDir = join(root, 'pv1');
    mkdirSync(pvDir);
    await store.create(PersistentVolumeType, {
      metadata: { name: 'pv1' },
      spec: { hostPath: { path: pvDir }, capacity: { storage: '1Gi' } },
    } as KubeObject);
    await store.create(PersistentVolumeType, {
      metadata: { name: 'nfs1' },
      spec: { nfs: { server: 'x', path: '/e' } },
    } as KubeObject);
    const claim = async (name: string, volumeName: string | undefined, phase: string) => {
      const c = await store.create(PersistentVolumeClaimType, {
        metadata: { name, namespace: 'ns1' },
        spec: { volumeName },
      } as KubeObject);
      await store.updateStatus(PersistentVolumeClaimType, { ...c, status: { phase } } as KubeObject);
    };
    await claim('bound', 'pv1', 'Bound');
    await claim('pending', undefined, 'Pending');
    await claim('nfs', 'nfs1', 'Bound');
    await store.create(PersistentVolumeType, {
      metadata: { name: 'blk1' },
      spec: { hostPath: { path: pvDir }, volumeMode: 'Block' },
    } as KubeObject);
    await claim('blk', 'blk1', 'Bound');
    const p = pod([
      { name: 'disk', persistentVolumeClaim: { claimName: 'bound' } },
      { name: 'wait', persistentVolumeClaim: { claimName: 'pending' } },
      { name: 'other', persistentVolumeClaim: { claimName: 'nfs' } },
      { name: 'blk', persistentVolumeClaim: { claimName: 'blk' } },
    ]);
    expect(await materializeVolume(store, dir, p, p.spec!.volumes![0], 0)).toEqual({
      hostPath: pvDir,
    });
    await expect(materializeVolume(store, dir, p, p.spec!.volumes![1], 1)).rejects.toThrow(
      'spec.volumes[1].persistentVolumeClaim: PersistentVolumeClaim "ns1/pending" is not bound (phase Pending)',
    );
    await expect(materializeVolume(store, dir, p, p.spec!.volumes![2], 2)).rejects.toThrow(
      /PersistentVolume "nfs1" bound to "ns1\/nfs" is neither hostPath, local nor CSI/,
    );
    await expect(materializeVolume(store, dir, p, p.spec!.volumes![3], 3)).rejects.toThrow(
      'spec.volumes[3].persistentVolumeClaim: PersistentVolumeClaim "ns1/blk" is in Block mode; this runtime mounts filesystem claims only',
    );
  });

  it('maps subPath mounts and links mounts nested in an emptyDir; removing the pod keeps hostPath files', async () => {
    await store.create(SecretType, {
      metadata: { name: 'ud', namespace: 'ns1' },
      data: { userdata: Buffer.from('#cloud-config\n').toString('base64') },
    } as KubeObject);
    const hostDir = join(root, 'hostdisks');
    const p = pod(
      [
        { name: 'private', emptyDir: {} },
        { name: 'ci-udata', secret: { secretName: 'ud' } },
        { name: 'hd', hostPath: { path: hostDir, type: 'DirectoryOrCreate' } },
      ],
      [
        { name: 'private', mountPath: '/var/run/kubevirt-private' },
        {
          name: 'ci-udata',
          mountPath: '/var/run/kubevirt-private/secret/ci/userdata',
          subPath: 'userdata',
          readOnly: true,
        },
        { name: 'hd', mountPath: '/var/run/kubevirt-private/vmi-disks/hd' },
      ],
    );
    const mounts = await preparePodDirs(root, p, store);
    const priv = join(dir, 'volumes', 'kubernetes.io~empty-dir', 'private');
    expect(mounts['/var/run/kubevirt-private']).toBe(priv);
    expect(mounts['/var/run/kubevirt-private/secret/ci/userdata']).toBe(
      join(dir, 'volumes', 'kubernetes.io~secret', 'ci-udata', 'userdata'),
    );
    expect(readFileSync(mounts['/var/run/kubevirt-private/secret/ci/userdata'], 'utf8')).toBe(
      '#cloud-config\n',
    );
    expect(mounts['/var/run/kubevirt-private/vmi-disks/hd']).toBe(hostDir);
    // Seen from the private emptyDir, the nested mount is there too.
    expect(lstatSync(join(priv, 'vmi-disks', 'hd')).isSymbolicLink()).toBe(true);
    writeFileSync(join(priv, 'vmi-disks', 'hd', 'disk.img'), 'data');
    expect(readFileSync(join(hostDir, 'disk.img'), 'utf8')).toBe('data');
    await removePodDirs(root, 'pod-uid-1');
    expect(existsSync(dir)).toBe(false);
    expect(readFileSync(join(hostDir, 'disk.img'), 'utf8')).toBe('data');
  });

  it('fails the pod with the volume named when a source is missing', async () => {
    const p = pod([{ name: 'cfg', configMap: { name: 'absent' } }], [{ name: 'cfg', mountPath: '/x' }]);
    await expect(preparePodDirs(root, p, store)).rejects.toThrow(
      'Pod ns1/virt-launcher-vm1-abcde: spec.volumes[0].configMap: configmap "ns1/absent" not found',
    );
  });
});

describe('PodRuntime with a volume it cannot set up yet', () => {
  it('keeps the pod Pending in ContainerCreating with a FailedMount event naming the volume, and starts it once the source exists', async () => {
    const store = await EmbeddedStore.open();
    const root = mkdtempSync(join(tmpdir(), 'kvts-podvol-rt-'));
    const rt = new PodRuntime({
      client: store,
      nodeName: 'n1',
      root,
      bindPending: true,
      manageNode: false,
      commands: { sh: ['/bin/sh'] },
      pollMs: 50,
      log: () => {},
    });
    await rt.start();
    try {
      const created = await store.create(PodType, {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: { name: 'p1', namespace: 'default' },
        spec: {
          containers: [
            {
              name: 'compute',
              image: 'x',
              command: ['sh'],
              args: ['-c', 'touch started; sleep 30'],
              volumeMounts: [{ name: 'cfg', mountPath: '/cfg' }],
            },
          ],
          volumes: [{ name: 'cfg', configMap: { name: 'absent' } }],
        },
      } as KubeObject);
      const creating = await waitFor(
        'the pod Pending in ContainerCreating',
        async () => {
          const p = await store.get<Pod & KubeObject>(PodType, 'p1', 'default');
          return p.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'ContainerCreating'
            ? p
            : undefined;
        },
        20_000,
      );
      expect(creating.status?.phase).toBe('Pending');
      expect(rt.pidOf(created.metadata?.uid ?? '')).toBeUndefined();
      const events = await waitFor(
        'the FailedMount event',
        async () => {
          const l = await store.list<KubeObject & { reason?: string; message?: string; type?: string }>(
            EventType,
            { namespace: 'default' },
          );
          const e = l.items.filter((x) => x.reason === 'FailedMount');
          return e.length ? e : undefined;
        },
        20_000,
      );
      expect(events[0]).toMatchObject({
        type: 'Warning',
        message: 'Pod default/p1: spec.volumes[0].configMap: configmap "default/absent" not found',
      });
      // The configMap arrives later (applied after the VM, say): the retry mounts it and starts the pod.
      await store.create(ConfigMapType, {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: 'absent', namespace: 'default' },
        data: { k: 'v' },
      } as KubeObject);
      const running = await waitFor(
        'the pod Running',
        async () => {
          const p = await store.get<Pod & KubeObject>(PodType, 'p1', 'default');
          return p.status?.phase === 'Running' ? p : undefined;
        },
        20_000,
      );
      expect(rt.pidOf(running.metadata?.uid ?? '')).toBeGreaterThan(0);
      // One event for the one reason, however often it was retried.
      const all = await store.list<KubeObject & { reason?: string }>(EventType, { namespace: 'default' });
      expect(all.items.filter((x) => x.reason === 'FailedMount')).toHaveLength(1);
    } finally {
      await rt.stop();
      rt.killAll();
      rmSync(root, { recursive: true, force: true });
    }
  });
});
