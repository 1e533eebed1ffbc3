/**
 * snapshot-controller's and csi-snapshotter's work for local mode, against the driver's
 * Controller service in-process: a VolumeSnapshot of a claim bound to a PV of the driver
 * gets a VolumeSnapshotContent (`snapcontent-<snapshot uid>`, the sidecars' name and shape:
 * driver, deletionPolicy and class from the VolumeSnapshotClass, `volumeSnapshotRef`, the
 * source's volume handle) from CreateSnapshot (named `snapshot-<snapshot uid>`), and both
 * statuses (`boundVolumeSnapshotContentName`, `readyToUse`, `creationTime`,
 * `restoreSize`). A content whose VolumeSnapshot is gone is DeleteSnapshot'd and removed
 * (deletionPolicy Delete) or left (Retain). Pre-provisioned contents (a
 * `source.snapshotHandle` made by hand) are not bound here: such a VolumeSnapshot gets an
 * error status saying so.
 */
import { formatBytes } from '../../common/quantity';
import { DRIVER_NAME } from '../../csi-driver/identity-service';
import { AlreadyExistsError, NotFoundError } from '../../runtime/errors';
import type { Informer } from '../../runtime/informer';
import { Manager } from '../../runtime/manager';
import { PersistentVolumeClaimType, PersistentVolumeType } from '../../runtime/resources';
import {
  VolumeSnapshotClassType,
  VolumeSnapshotContentType,
  VolumeSnapshotType,
} from '../../runtime/storage-resources';
import type { KubeObject, ObjectClient } from '../../runtime/types';
import type { LocalCsi } from './local-csi';

/** The external-snapshotter's default-class annotation. */
const DEFAULT_SNAPSHOT_CLASS = 'snapshot.storage.kubernetes.io/is-default-class';

interface Snapshot extends KubeObject {
  spec?: {
    source?: { persistentVolumeClaimName?: string; volumeSnapshotContentName?: string };
    volumeSnapshotClassName?: string;
  };
  status?: Record<string, unknown> & { boundVolumeSnapshotContentName?: string };
}
interface SnapshotClass extends KubeObject {
  driver?: string;
  deletionPolicy?: string;
  parameters?: Record<string, string>;
}
interface Content extends KubeObject {
  spec?: {
    driver?: string;
    deletionPolicy?: string;
    volumeSnapshotRef?: { name?: string; namespace?: string; uid?: string };
  };
  status?: { snapshotHandle?: string };
}

/** Options of {@link LocalSnapshotter}. */
export interface LocalSnapshotterOptions {
  client: ObjectClient;
  csi: LocalCsi;
  log?: (message: string) => void;
}

/** The content name the sidecars give a snapshot's content. */
export function contentNameFor(vs: KubeObject): string {
  return `snapcontent-${vs.metadata?.uid}`;
}

/** Takes and deletes snapshots of the driver's volumes; see the module comment. */
export class LocalSnapshotter {
  private readonly manager: Manager;
  private readonly snapshots: Informer<KubeObject>;
  private readonly contents: Informer<KubeObject>;
  private readonly classes: Informer<KubeObject>;
  private readonly log: (m: string) => void;

  constructor(private readonly o: LocalSnapshotterOptions) {
    this.log = o.log ?? (() => {});
    this.manager = new Manager({ client: o.client });
    this.classes = this.manager.informers.informerFor(VolumeSnapshotClassType);
    const snapLoop = this.manager.addController({
      name: 'local-snapshotter',
      forType: VolumeSnapshotType,
      reconciler: { reconcile: (req) => this.take(`${req.namespace}/${req.name}`) },
      onError: (req, err) => this.log(`VolumeSnapshot ${req.namespace}/${req.name}: ${err.message}`),
    });
    this.snapshots = snapLoop.informer;
    const contentLoop = this.manager.addController({
      name: 'local-snapshotter-deleter',
      forType: VolumeSnapshotContentType,
      // A VolumeSnapshot going away releases its content.
      watches: [
        {
          type: VolumeSnapshotType,
          map: () => this.contents.indexer.list().map((c) => ({ name: c.metadata?.name ?? '' })),
        },
      ],
      reconciler: { reconcile: (req) => this.release(req.name) },
      onError: (req, err) => this.log(`VolumeSnapshotContent ${req.name}: ${err.message}`),
    });
    this.contents = contentLoop.informer;
  }

  async start(): Promise<void> {
    await this.manager.start();
  }

  async stop(): Promise<void> {
    await this.manager.stop();
  }

  private classFor(vs: Snapshot): SnapshotClass | undefined {
    const all = this.classes.indexer.list() as SnapshotClass[];
    const named = vs.spec?.volumeSnapshotClassName;
    if (named) return all.find((c) => c.metadata?.name === named);
    return all.find(
      (c) => c.driver === DRIVER_NAME && c.metadata?.annotations?.[DEFAULT_SNAPSHOT_CLASS] === 'true',
    );
  }

  private async fail(vs: Snapshot, message: string): Promise<void> {
    if ((vs.status?.error as { message?: string } | undefined)?.message === message) return;
    await this.o.client.updateStatus(VolumeSnapshotType, {
      ...vs,
      status: { ...vs.status, readyToUse: false, error: { message, time: new Date().toISOString() } },
    } as KubeObject);
  }

  private async take(key: string): Promise<undefined> {
    const vs = this.snapshots.indexer.get(key) as Snapshot | undefined;
    if (!vs || vs.metadata?.deletionTimestamp || vs.status?.boundVolumeSnapshotContentName) return undefined;
    const ns = vs.metadata?.namespace;
    const claimName = vs.spec?.source?.persistentVolumeClaimName;
    if (!claimName) {
      await this.fail(
        vs,
        'spec.source.volumeSnapshotContentName: pre-provisioned snapshots are not bound in local mode',
      );
      return undefined;
    }
    const cls = this.classFor(vs);
    if (!cls) {
      await this.fail(
        vs,
        `spec.volumeSnapshotClassName: no VolumeSnapshotClass ${vs.spec?.volumeSnapshotClassName ?? '(default)'}`,
      );
      return undefined;
    }
    if (cls.driver !== DRIVER_NAME) return undefined; // another driver's: not ours to take
    const claim = await this.o.client
      .get<KubeObject & { spec?: { volumeName?: string } }>(PersistentVolumeClaimType, claimName, ns)
      .catch((e) => (e instanceof NotFoundError ? undefined : Promise.reject(e)));
    const pvName = claim?.spec?.volumeName;
    if (!pvName) {
      await this.fail(
        vs,
        `spec.source.persistentVolumeClaimName: claim ${ns}/${claimName} is missing or not bound`,
      );
      return undefined;
    }
    const pv = await this.o.client.get<
      KubeObject & { spec?: { csi?: { driver?: string; volumeHandle?: string } } }
    >(PersistentVolumeType, pvName);
    const handle = pv.spec?.csi?.driver === DRIVER_NAME ? pv.spec.csi.volumeHandle : undefined;
    if (!handle) {
      await this.fail(
        vs,
        `spec.source.persistentVolumeClaimName: claim ${ns}/${claimName} is not a volume of ${DRIVER_NAME}`,
      );
      return undefined;
    }
    const { controller } = await this.o.csi.ready();
    const { snapshot } = await controller.createSnapshot({
      sourceVolumeId: handle,
      name: `snapshot-${vs.metadata?.uid}`,
      secrets: {},
      parameters: { ...cls.parameters },
    });
    if (!snapshot) throw new Error('CreateSnapshot returned no snapshot');
    const created = snapshot.creationTime ?? new Date();
    const contentName = contentNameFor(vs);
    const content = {
      apiVersion: 'snapshot.storage.k8s.io/v1',
      kind: 'VolumeSnapshotContent',
      metadata: { name: contentName },
      spec: {
        driver: DRIVER_NAME,
        deletionPolicy: cls.deletionPolicy ?? 'Delete',
        source: { volumeHandle: handle },
        volumeSnapshotClassName: cls.metadata?.name,
        volumeSnapshotRef: {
          apiVersion: 'snapshot.storage.k8s.io/v1',
          kind: 'VolumeSnapshot',
          name: vs.metadata?.name,
          namespace: ns,
          uid: vs.metadata?.uid,
        },
      },
    } as KubeObject;
    // Made by an earlier pass that stopped before the statuses: that one is completed.
    const made = await this.o.client.create<KubeObject>(VolumeSnapshotContentType, content).catch((e) => {
      if (!(e instanceof AlreadyExistsError)) throw e;
      return this.o.client.get<KubeObject>(VolumeSnapshotContentType, contentName);
    });
    await this.o.client.updateStatus(VolumeSnapshotContentType, {
      ...made,
      status: {
        snapshotHandle: snapshot.snapshotId,
        // The sidecar's int64 nanoseconds since the epoch.
        creationTime: created.getTime() * 1_000_000,
        readyToUse: snapshot.readyToUse,
        restoreSize: snapshot.sizeBytes,
      },
    } as KubeObject);
    await this.o.client.updateStatus(VolumeSnapshotType, {
      ...vs,
      status: {
        boundVolumeSnapshotContentName: contentName,
        creationTime: created.toISOString(),
        readyToUse: snapshot.readyToUse,
        restoreSize: formatBytes(BigInt(snapshot.sizeBytes)),
      },
    } as KubeObject);
    this.log(`took snapshot ${snapshot.snapshotId} of ${handle} for VolumeSnapshot ${key}`);
    return undefined;
  }

  /** Deletes a content (and its snapshot, deletionPolicy Delete) whose VolumeSnapshot is gone. */
  private async release(name: string): Promise<undefined> {
    const c = this.contents.indexer.get(name) as Content | undefined;
    if (!c || c.spec?.driver !== DRIVER_NAME) return undefined;
    const ref = c.spec.volumeSnapshotRef;
    if (!ref?.name) return undefined;
    const vs = await this.o.client
      .get<KubeObject>(VolumeSnapshotType, ref.name, ref.namespace)
      .catch((e) => (e instanceof NotFoundError ? undefined : Promise.reject(e)));
    if (vs && (!ref.uid || vs.metadata?.uid === ref.uid)) return undefined;
    if ((c.spec.deletionPolicy ?? 'Delete') !== 'Delete') return undefined;
    if (c.status?.snapshotHandle)
      await (await this.o.csi.ready()).controller.deleteSnapshot({
        snapshotId: c.status.snapshotHandle,
        secrets: {},
      });
    await this.o.client.delete(VolumeSnapshotContentType, name).catch((e) => {
      if (!(e instanceof NotFoundError)) throw e;
    });
    this.log(`deleted VolumeSnapshotContent ${name}: its VolumeSnapshot is gone`);
    return undefined;
  }
}
