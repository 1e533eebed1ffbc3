/**
 * external-provisioner's work for local mode, against the driver's Controller service
 * in-process (local-csi.ts): a Pending claim of a StorageClass whose provisioner is the
 * project's driver gets a volume from CreateVolume (named `pvc-<claim uid>`, as the
 * sidecar names it) and a PersistentVolume of the sidecar's shape (`pv.kubernetes.io/
 * provisioned-by`, `spec.csi`, node affinity from the volume's topology, the class's
 * reclaim policy, `claimRef` set), which the static binder (../pv-binder.ts) then binds.
 * The claim gets the PV controller's `volume.kubernetes.io/storage-provisioner`
 * annotations first. Local mode's one node serves every topology, so WaitForFirstConsumer
 * waits only for a consumer pod to be bound to that node (as the scheduler's
 * `volume.kubernetes.io/selected-node` would say) and Immediate provisions at once.
 * A provisioned PV with reclaim policy Delete whose claim is gone is unstaged on this
 * node, DeleteVolume'd, then removed; Retain keeps both.
 */
import { bytesOf, formatBytes } from '../../common/quantity';
import type { VolumeContentSource } from '../../csi-driver/generated/csi/csi';
import { DRIVER_NAME } from '../../csi-driver/identity-service';
import { TOPOLOGY_KEY } from '../../csi-driver/topology';
import type { ClaimObject as BinderClaim } from '../../local/pv-binder';
import { NotFoundError } from '../../runtime/errors';
import type { Informer } from '../../runtime/informer';
import { Manager } from '../../runtime/manager';
import {
  PersistentVolumeClaimType,
  PersistentVolumeType,
  PodType,
  StorageClassType,
} from '../../runtime/resources';
import { VolumeSnapshotContentType, VolumeSnapshotType } from '../../runtime/storage-resources';
import type { KubeObject, ObjectClient } from '../../runtime/types';

type DataSource = { apiGroup?: string; kind?: string; name?: string };
/** The claim fields the provisioner reads besides the binder's. */
type ClaimObject = BinderClaim & { spec?: { dataSource?: DataSource; dataSourceRef?: DataSource } };

import { DEFAULT_FS_TYPE, volumeCapability } from './capability';
import type { LocalCsi } from './local-csi';
import { unstageIfUnused } from './node-volumes';

/** The PV controller's annotation naming the claim's provisioner (beta and GA names). */
export const STORAGE_PROVISIONER_ANNOTATIONS = [
  'volume.kubernetes.io/storage-provisioner',
  'volume.beta.kubernetes.io/storage-provisioner',
];
/** external-provisioner's annotation on the PVs it made. */
export const PROVISIONED_BY_ANNOTATION = 'pv.kubernetes.io/provisioned-by';
/** The scheduler's choice of node for a WaitForFirstConsumer claim. */
export const SELECTED_NODE_ANNOTATION = 'volume.kubernetes.io/selected-node';

interface StorageClassObject extends KubeObject {
  provisioner?: string;
  parameters?: Record<string, string>;
  reclaimPolicy?: string;
  volumeBindingMode?: string;
  mountOptions?: string[];
}

interface ProvisionedVolume extends KubeObject {
  spec?: {
    claimRef?: { namespace?: string; name?: string; uid?: string };
    csi?: { driver?: string; volumeHandle?: string };
    persistentVolumeReclaimPolicy?: string;
  };
}

interface PodObject extends KubeObject {
  spec?: { nodeName?: string; volumes?: Array<{ persistentVolumeClaim?: { claimName?: string } }> };
}

/** Options of {@link LocalProvisioner}. */
export interface LocalProvisionerOptions {
  client: ObjectClient;
  csi: LocalCsi;
  nodeName: string;
  log?: (message: string) => void;
}

/** The PV name external-provisioner gives a claim's volume. */
export function volumeNameFor(claim: KubeObject): string {
  return `pvc-${claim.metadata?.uid}`;
}

/** Provisions and deletes volumes of the driver's classes; see the module comment. */
export class LocalProvisioner {
  private readonly manager: Manager;
  private readonly classes: Informer<KubeObject>;
  private readonly claims: Informer<KubeObject>;
  private readonly volumes: Informer<KubeObject>;
  private readonly pods: Informer<KubeObject>;
  private readonly log: (m: string) => void;

  constructor(private readonly o: LocalProvisionerOptions) {
    this.log = o.log ?? (() => {});
    this.manager = new Manager({ client: o.client });
    const inf = this.manager.informers;
    this.classes = inf.informerFor(StorageClassType);
    this.pods = inf.informerFor(PodType);
    const waiting = () =>
      (this.claims.indexer.list() as ClaimObject[])
        .filter((c) => !c.spec?.volumeName)
        .map((c) => ({ namespace: c.metadata?.namespace, name: c.metadata?.name ?? '' }));
    const claimLoop = this.manager.addController({
      name: 'local-provisioner',
      forType: PersistentVolumeClaimType,
      // A class or a consumer pod appearing may let a waiting claim provision.
      watches: [
        { type: StorageClassType, map: waiting },
        { type: PodType, map: waiting },
        // ... and so may a VolumeSnapshot becoming ready (a restore's claim).
        { type: VolumeSnapshotType, map: waiting },
      ],
      reconciler: { reconcile: (req) => this.provision(`${req.namespace}/${req.name}`) },
      onError: (req, err) => this.log(`PersistentVolumeClaim ${req.namespace}/${req.name}: ${err.message}`),
    });
    this.claims = claimLoop.informer;
    const volumeLoop = this.manager.addController({
      name: 'local-provisioner-deleter',
      forType: PersistentVolumeType,
      // A claim going away releases its volume.
      watches: [
        {
          type: PersistentVolumeClaimType,
          map: () =>
            (this.volumes.indexer.list() as ProvisionedVolume[])
              .filter((v) => v.spec?.csi?.driver === DRIVER_NAME)
              .map((v) => ({ name: v.metadata?.name ?? '' })),
        },
      ],
      reconciler: { reconcile: (req) => this.release(req.name) },
      onError: (req, err) => this.log(`PersistentVolume ${req.name}: ${err.message}`),
    });
    this.volumes = volumeLoop.informer;
  }

  async start(): Promise<void> {
    await this.manager.start();
  }

  async stop(): Promise<void> {
    await this.manager.stop();
  }

  private classOf(claim: ClaimObject): StorageClassObject | undefined {
    const name = claim.spec?.storageClassName;
    if (!name) return undefined;
    const sc = this.classes.indexer.get(name) as StorageClassObject | undefined;
    return sc?.provisioner === DRIVER_NAME ? sc : undefined;
  }

  /** Whether a pod on this node uses the claim (local mode's stand-in for the scheduler's selected node). */
  private hasConsumer(claim: ClaimObject): boolean {
    const ns = claim.metadata?.namespace;
    const name = claim.metadata?.name;
    return (this.pods.indexer.list() as PodObject[]).some(
      (p) =>
        p.metadata?.namespace === ns &&
        p.spec?.nodeName === this.o.nodeName &&
        (p.spec?.volumes ?? []).some((v) => v.persistentVolumeClaim?.claimName === name),
    );
  }

  private async provision(key: string): Promise<undefined> {
    let claim = this.claims.indexer.get(key) as ClaimObject | undefined;
    if (!claim || claim.metadata?.deletionTimestamp || claim.spec?.volumeName) return undefined;
    const sc = this.classOf(claim);
    if (!sc) return undefined;
    const ann = claim.metadata?.annotations ?? {};
    const waitForConsumer = sc.volumeBindingMode === 'WaitForFirstConsumer';
    if (waitForConsumer && !ann[SELECTED_NODE_ANNOTATION] && !this.hasConsumer(claim)) return undefined;
    const pvName = volumeNameFor(claim);
    if (this.volumes.indexer.get(pvName)) return undefined; // made already; the binder binds it
    if (
      STORAGE_PROVISIONER_ANNOTATIONS.some((a) => ann[a] !== DRIVER_NAME) ||
      (waitForConsumer && !ann[SELECTED_NODE_ANNOTATION])
    ) {
      const extra = Object.fromEntries(STORAGE_PROVISIONER_ANNOTATIONS.map((a) => [a, DRIVER_NAME]));
      if (waitForConsumer) extra[SELECTED_NODE_ANNOTATION] = this.o.nodeName;
      claim = await this.o.client.update<ClaimObject>(PersistentVolumeClaimType, {
        ...claim,
        metadata: { ...claim.metadata, annotations: { ...ann, ...extra } },
      });
    }
    const field = `PersistentVolumeClaim ${key}: spec.resources.requests.storage`;
    const size = bytesOf(claim.spec?.resources?.requests?.storage, field);
    if (!size || size <= 0n) throw new Error(`${field}: a provisioned claim needs a positive size`);
    const fsType = sc.parameters?.['csi.storage.k8s.io/fstype'] || DEFAULT_FS_TYPE;
    // The class's parameters minus the sidecar's own csi.storage.k8s.io/ keys, as the sidecar passes them.
    const parameters = Object.fromEntries(
      Object.entries(sc.parameters ?? {}).filter(([k]) => !k.startsWith('csi.storage.k8s.io/')),
    );
    const contentSource = await this.contentSource(claim, key);
    if (contentSource === 'wait') return undefined;
    const { controller } = await this.o.csi.ready();
    const { volume } = await controller.createVolume({
      volumeContentSource: contentSource,
      name: pvName,
      capacityRange: { requiredBytes: Number(size), limitBytes: 0 },
      volumeCapabilities: (claim.spec?.accessModes ?? ['ReadWriteOnce']).map((m) =>
        volumeCapability(m, claim.spec?.volumeMode, fsType),
      ),
      parameters,
      secrets: {},
      accessibilityRequirements: {
        requisite: [{ segments: { [TOPOLOGY_KEY]: this.o.nodeName } }],
        preferred: [{ segments: { [TOPOLOGY_KEY]: this.o.nodeName } }],
      },
      mutableParameters: {},
    });
    if (!volume) throw new Error('CreateVolume returned no volume');
    const terms = (volume.accessibleTopology ?? []).map((t) => ({
      matchExpressions: Object.entries(t.segments).map(([k, v]) => ({ key: k, operator: 'In', values: [v] })),
    }));
    const block = claim.spec?.volumeMode === 'Block';
    await this.o.client.create(PersistentVolumeType, {
      apiVersion: 'v1',
      kind: 'PersistentVolume',
      metadata: { name: pvName, annotations: { [PROVISIONED_BY_ANNOTATION]: DRIVER_NAME } },
      spec: {
        accessModes: claim.spec?.accessModes ?? ['ReadWriteOnce'],
        capacity: { storage: formatBytes(BigInt(volume.capacityBytes)) },
        claimRef: {
          apiVersion: 'v1',
          kind: 'PersistentVolumeClaim',
          namespace: claim.metadata?.namespace,
          name: claim.metadata?.name,
          uid: claim.metadata?.uid,
        },
        csi: {
          driver: DRIVER_NAME,
          volumeHandle: volume.volumeId,
          ...(block ? {} : { fsType }),
          volumeAttributes: { ...volume.volumeContext },
        },
        ...(terms.length ? { nodeAffinity: { required: { nodeSelectorTerms: terms } } } : {}),
        persistentVolumeReclaimPolicy: sc.reclaimPolicy ?? 'Delete',
        storageClassName: sc.metadata?.name,
        volumeMode: block ? 'Block' : 'Filesystem',
        ...(sc.mountOptions?.length ? { mountOptions: sc.mountOptions } : {}),
      },
    } as KubeObject);
    this.log(`provisioned PersistentVolume ${pvName} (${volume.volumeId}) for claim ${key}`);
    return undefined;
  }

  /**
   * The claim's dataSource as CreateVolume's content source, as external-provisioner reads
   * it: a ready VolumeSnapshot of the driver (its content's snapshot handle) or a bound
   * claim of the driver in the same namespace (a CSI clone); 'wait' while the snapshot is
   * not ready. Other kinds (volume populators) are refused with the field at fault.
   */
  private async contentSource(
    claim: ClaimObject,
    key: string,
  ): Promise<VolumeContentSource | undefined | 'wait'> {
    const src = claim.spec?.dataSourceRef ?? claim.spec?.dataSource;
    if (!src?.name) return undefined;
    const ns = claim.metadata?.namespace;
    const field = `PersistentVolumeClaim ${key}: spec.dataSource`;
    const missing = (e: unknown) => (e instanceof NotFoundError ? undefined : Promise.reject(e));
    if (src.kind === 'VolumeSnapshot' && src.apiGroup === 'snapshot.storage.k8s.io') {
      const vs = await this.o.client
        .get<KubeObject & { status?: { readyToUse?: boolean; boundVolumeSnapshotContentName?: string } }>(
          VolumeSnapshotType,
          src.name,
          ns,
        )
        .catch(missing);
      const contentName = vs?.status?.readyToUse ? vs.status.boundVolumeSnapshotContentName : undefined;
      if (!contentName) return 'wait';
      const content = await this.o.client
        .get<KubeObject & { spec?: { driver?: string }; status?: { snapshotHandle?: string } }>(
          VolumeSnapshotContentType,
          contentName,
        )
        .catch(missing);
      if (content?.spec?.driver !== DRIVER_NAME || !content.status?.snapshotHandle)
        throw new Error(`${field}: VolumeSnapshot ${ns}/${src.name} is not a snapshot of ${DRIVER_NAME}`);
      return { snapshot: { snapshotId: content.status.snapshotHandle } };
    }
    if (src.kind === 'PersistentVolumeClaim' && !src.apiGroup) {
      const source = await this.o.client
        .get<ClaimObject>(PersistentVolumeClaimType, src.name, ns)
        .catch(missing);
      const pvName = source?.spec?.volumeName;
      if (!pvName) return 'wait';
      const pv = (await this.o.client.get<ProvisionedVolume>(PersistentVolumeType, pvName)).spec?.csi;
      if (pv?.driver !== DRIVER_NAME || !pv.volumeHandle)
        throw new Error(`${field}: claim ${ns}/${src.name} is not a volume of ${DRIVER_NAME}`);
      return { volume: { volumeId: pv.volumeHandle } };
    }
    throw new Error(
      `${field}: ${src.apiGroup ? `${src.apiGroup}/` : ''}${src.kind} is not a source local mode provisions from (VolumeSnapshot, PersistentVolumeClaim)`,
    );
  }

  /** Deletes a provisioned volume whose claim is gone (reclaim policy Delete). */
  private async release(name: string): Promise<undefined> {
    const pv = this.volumes.indexer.get(name) as ProvisionedVolume | undefined;
    if (!pv || pv.metadata?.annotations?.[PROVISIONED_BY_ANNOTATION] !== DRIVER_NAME) return undefined;
    if ((pv.spec?.persistentVolumeReclaimPolicy ?? 'Delete') !== 'Delete') return undefined;
    const ref = pv.spec?.claimRef;
    if (!ref?.name) return undefined;
    const claim = await this.o.client
      .get<KubeObject>(PersistentVolumeClaimType, ref.name, ref.namespace)
      .catch((e) => (e instanceof NotFoundError ? undefined : Promise.reject(e)));
    if (claim && (!ref.uid || claim.metadata?.uid === ref.uid)) return undefined;
    const handle = pv.spec?.csi?.volumeHandle ?? '';
    // A pod still holding it fails this (the volume is in use) and the retry comes back.
    await unstageIfUnused(this.o.csi, name, handle);
    await (await this.o.csi.ready()).controller.deleteVolume({ volumeId: handle, secrets: {} });
    await this.o.client.delete(PersistentVolumeType, name).catch((e) => {
      if (!(e instanceof NotFoundError)) throw e;
    });
    this.log(`deleted PersistentVolume ${name} (${handle}): its claim is gone`);
    return undefined;
  }
}
