/**
 * The shared setup of the cluster test files that need storage (DataVolumes, hotplug,
 * snapshots, exports...): the one-node cluster, the host locks `cluster-components` and
 * `csi-driver` for the file's whole run (the driver's one name registers once with a
 * kubelet), the components from the manifests, the project's CSI stack in this process
 * (test/cluster/csi-stack.ts), optionally the VolumeSnapshot kinds and class, and the
 * file's namespace. The teardown runs in the one order that leaves the pool empty: the
 * namespace (VMs, claims) while the driver and provisioner still answer, then the PVs,
 * the components, the driver and the pool (its leftover check), the snapshot kinds, and
 * the locks last, also when an earlier step throws.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import {
  CoreV1Api,
  CustomObjectsApi,
  KubeConfig,
  KubernetesObjectApi,
  type V1Pod,
} from '@kubernetes/client-node';
import type { ClusterInfo } from '../../scripts/cluster/state';
import { DRIVER_NAME } from '../../src/controllers/csi-driver/identity-service';
import { volumeSnapshotClassObject } from '../../src/controllers/csi-driver/objects';
import { CONSOLE_SOCKET, podEmptyDirPath } from '../../src/controllers/launcher-protocol/paths';
import { shortDir } from '../../src/controllers/launcher-protocol/short-dir';
import { sharedCluster } from '../support/cluster';
import { installComponents } from '../support/cluster-install';
import {
  createTestNamespace,
  deleteNamespaceAndWait,
  waitForDriverPvsDeleted,
} from '../support/cluster-namespace';
import { kubectlBin, kubectlWith } from '../support/cluster-pods';
import { SerialConsole } from '../support/guest';
import { acquireHostLocks } from '../support/host-lock';
import { waitFor } from '../support/wait';
import { installSnapshotCrds, removeSnapshotCrds } from './csi-sidecars';
import { type CsiStack, startCsiStack } from './csi-stack';

const run = promisify(execFile);

export interface StorageClusterOptions {
  /** The file's namespace, created by setUp and deleted (and waited for) by tearDown. */
  namespace: string;
  /** The prefix of the temporary directory holding the applied manifests. */
  tmpPrefix: string;
  /**
   * Serve the VolumeSnapshot kinds (before virt-controller starts: it runs its snapshot
   * controllers only when they are served) and create the VolumeSnapshotClass.
   */
  snapshots?: boolean;
  /** The test pool's size (default csi-stack's 2 GiB). */
  poolBytes?: number;
}

/** A cluster test file's storage setup; fields are set by {@link StorageCluster.setUp}. */
export class StorageCluster {
  info!: ClusterInfo;
  kc!: KubeConfig;
  core!: CoreV1Api;
  custom!: CustomObjectsApi;
  objects!: KubernetesObjectApi;
  /** kubectl with the cluster's kubeconfig, synchronous: it blocks this process's CSI driver. */
  kubectl!: (...args: string[]) => string;
  /** The temporary directory: the applied manifests, and the file's own files. */
  dir = '';
  csi: CsiStack | undefined;
  private releaseLocks: (() => void) | undefined;
  private crds: Array<Record<string, unknown>> = [];

  constructor(readonly opts: StorageClusterOptions) {}

  get namespace(): string {
    return this.opts.namespace;
  }

  /** For `beforeAll` (give it about 20 minutes: the locks may wait for another file). */
  async setUp(): Promise<void> {
    this.info = await sharedCluster();
    this.releaseLocks = await acquireHostLocks(['cluster-components', 'csi-driver'], 900_000);
    this.kubectl = kubectlWith(this.info.kubeconfigPath);
    this.kc = new KubeConfig();
    this.kc.loadFromFile(this.info.kubeconfigPath);
    this.core = this.kc.makeApiClient(CoreV1Api);
    this.custom = this.kc.makeApiClient(CustomObjectsApi);
    this.objects = KubernetesObjectApi.makeApiClient(this.kc);
    this.dir = mkdtempSync(join(tmpdir(), this.opts.tmpPrefix));
    if (this.opts.snapshots) this.crds = await installSnapshotCrds(this.objects);
    // The components first: installComponents blocks this process (kubectl), and the CSI
    // driver runs in it: csi-provisioner exits when the driver does not answer at its start.
    installComponents(this.info, this.dir, this.kubectl);
    this.csi = await startCsiStack(this.info, this.kc, this.opts.poolBytes);
    if (this.opts.snapshots)
      await this.objects.create(volumeSnapshotClassObject() as never).catch((e: { code?: number }) => {
        if (e.code !== 409) throw e;
      });
    await createTestNamespace(this.core, this.namespace);
  }

  /** For `afterAll` (about 7 minutes). */
  async tearDown(): Promise<void> {
    try {
      if (this.core) {
        // The namespace first (VMs, DataVolumes, claims) while the driver and provisioner
        // run: the kubelet unpublishes, DeleteVolume empties the pool. The driver stops after.
        await deleteNamespaceAndWait(this.core, this.namespace, 180_000);
        await waitForDriverPvsDeleted(this.core, DRIVER_NAME, 120_000, () => this.csi?.sidecars.logs());
        await waitFor(
          'the pool empty',
          async () => (await this.csi?.volumes())?.length === 0,
          60_000,
          500,
        ).catch((e) => process.stderr.write(`${e}\n`));
      }
      try {
        if (this.dir) this.kubectl('delete', '--ignore-not-found', '--wait=false', '-f', this.dir);
      } catch {
        // the cluster goes down next anyway
      }
      if (this.dir) rmSync(this.dir, { recursive: true, force: true });
      await this.csi?.stop();
      if (this.opts.snapshots && this.objects) {
        await this.objects.delete(volumeSnapshotClassObject() as never).catch(() => {});
        await removeSnapshotCrds(this.objects, this.crds);
      }
    } finally {
      // Also when the pool's leftover check throws: the worker may run another file next.
      this.releaseLocks?.();
    }
  }

  /**
   * What the namespace shows for a failure message: its pods with their containers'
   * states, its events, and the last `tail` log lines of each of `components`
   * (`kubevirt.io=<component>` in namespace kubevirt; asynchronously, as the driver answers
   * in this process).
   */
  async diagnose(components: string[] = ['virt-controller'], tail = 30): Promise<string> {
    const ns = this.namespace;
    const pods = (await this.core.listNamespacedPod({ namespace: ns })).items.map(
      (p) =>
        `${p.metadata?.name} ${p.status?.phase} ${JSON.stringify(p.status?.containerStatuses?.map((c) => c.state))}`,
    );
    const evs = (await this.core.listNamespacedEvent({ namespace: ns })).items.map(
      (e) => `${e.involvedObject.kind}/${e.involvedObject.name} ${e.reason}: ${e.message}`,
    );
    let logs = '';
    for (const c of components)
      logs += await run(kubectlBin, [
        '--kubeconfig',
        this.info.kubeconfigPath,
        'logs',
        '-n',
        'kubevirt',
        '-l',
        `kubevirt.io=${c}`,
        `--tail=${tail}`,
        '--prefix',
      ])
        .then((r) => `${c}:\n${r.stdout}`)
        .catch((e) => `${c}: ${e}\n`);
    return `pods:\n${pods.join('\n')}\nevents:\n${evs.join('\n')}\n${logs}`;
  }

  /** {@link waitFor}, with {@link diagnose} and `extra()` in the error on a timeout. */
  waitOrDiagnose<T>(
    what: string,
    f: () => Promise<T | undefined>,
    ms: number,
    every = 250,
    extra: () => Promise<string> = async () => '',
  ): Promise<T> {
    return waitFor(what, f, ms, every).catch(async (e) => {
      throw new Error(`${e}\n${await extra()}\n${await this.diagnose()}`);
    });
  }

  /** The serial console of a launcher pod's guest, through the pod's sockets directory on the node. */
  async launcherConsole(pod: V1Pod): Promise<SerialConsole> {
    const sockets = podEmptyDirPath(
      join(this.info.stateDir, 'kubelet', 'pods'),
      pod.metadata?.uid ?? '',
      'sockets',
    );
    const con = await SerialConsole.connect(join(shortDir(sockets), CONSOLE_SOCKET), 60_000);
    // The shell prints its prompt only on input: a newline makes the boot marker's wait cheap to retry.
    con.write('\n');
    return con;
  }
}

/** The storage setup of one cluster test file: call setUp in beforeAll and tearDown in afterAll. */
export function storageClusterFixture(opts: StorageClusterOptions): StorageCluster {
  return new StorageCluster(opts);
}

/**
 * A VM with one virtio disk `root` on `volume` (its source: a PVC, DataVolume or
 * containerDisk), no graphics, and `terminationGracePeriodSeconds: 0`: the busybox guest
 * ignores ACPI shutdown, and without it a stop or the namespace's deletion waits out the
 * default 180 s grace.
 */
export function oneDiskVm(o: {
  name: string;
  namespace: string;
  volume: Record<string, unknown>;
  runStrategy?: string;
  memory?: string;
  dataVolumeTemplates?: object[];
}): Record<string, unknown> {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    metadata: { name: o.name, namespace: o.namespace },
    spec: {
      runStrategy: o.runStrategy ?? 'Always',
      ...(o.dataVolumeTemplates ? { dataVolumeTemplates: o.dataVolumeTemplates } : {}),
      template: {
        spec: {
          terminationGracePeriodSeconds: 0,
          domain: {
            devices: { autoattachGraphicsDevice: false, disks: [{ name: 'root', disk: { bus: 'virtio' } }] },
            resources: { requests: { memory: o.memory ?? '128Mi' } },
          },
          volumes: [{ name: 'root', ...o.volume }],
        },
      },
    },
  };
}
