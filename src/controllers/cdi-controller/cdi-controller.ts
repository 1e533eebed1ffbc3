/**
 * The CDI controllers (CDI's cdi-deployment: DataVolume and StorageProfile controllers)
 * on a runtime Manager: informers on DataVolumes, PVCs, importer pods (by label),
 * StorageClasses, StorageProfiles and CDIConfigs feed two reconcilers. virt-controller
 * hosts them on its own Manager (same leader election) when asked to.
 */
import type { CDIConfig, DataSource, DataVolume, StorageProfile } from '../../api/generated/cdi/types';
import type { EventRecorder } from '../common/controller-ports';
import { asReconciler, lister } from '../common/controller-wiring';
import type { Pod } from '../common/pod';
import type { Manager } from '../runtime/manager';
import {
  CDIConfigType,
  DataSourceType,
  DataVolumeType,
  IngressType,
  objectKey,
  PersistentVolumeClaimType,
  PodType,
  ServiceType,
  StorageClassType,
  StorageProfileType,
} from '../runtime/resources';
import { VolumeSnapshotType } from '../runtime/storage-resources';
import type { KubeObject } from '../runtime/types';
import { CdiLabels } from './annotations';
import { CDI_CONFIG_NAME, CdiConfigController, type IngressObject } from './cdi-config-controller';
import { claimSpecFor, filesystemOverhead, type StorageClassInfo } from './claim-spec';
import { DataVolumeCloner } from './clone-controller';
import { isCloneDataVolume, type VolumeSnapshotObject } from './clone-source';
import { DataSourceController } from './datasource-controller';
import { type ClaimObject, DataVolumeController } from './datavolume-controller';
import type { ImporterPodOptions } from './importer-pod';
import { StorageProfileController } from './storage-profile-controller';
import { type UploadCertIssuer, UploadController } from './upload-controller';

export interface CdiControllerOptions {
  manager: Manager;
  recorder: EventRecorder;
  importer: ImporterPodOptions;
  workers?: number;
  now?: () => Date;
  retryDelayMs?: (restarts: number) => number;
  /** How often a clone whose source a pod uses looks again (default 5 s). */
  cloneSourcePollMs?: number;
  /**
   * Clone sources (`pvc`, `snapshot`, `sourceRef`) need a provisioner honouring a claim's
   * dataSource: false where none runs (local mode on a host that cannot hold the CSI pool,
   * whose static PV binder makes empty volumes), and such DataVolumes fail saying so.
   */
  clones?: boolean;
  /**
   * Whether the cluster serves snapshot.storage.k8s.io's VolumeSnapshots (the
   * external-snapshotter's CRDs): without them `source.snapshot` DataVolumes fail, saying so.
   */
  snapshots?: boolean;
  /** Run the upload controller, its pods' certificates from this issuer (none: uploads are refused). */
  uploadCerts?: UploadCertIssuer;
  /** Why upload DataVolumes fail without `uploadCerts` (default: no upload controller runs here). */
  uploadsRefused?: string;
  /**
   * CDI's namespace, where an Ingress to the `cdi-uploadproxy` Service gives the CDIConfig's
   * `status.uploadProxyURL` (none: no Ingress is watched, only the override counts).
   */
  uploadProxyNamespace?: string;
  onError?: (controller: string, key: string, err: Error) => void;
}

/** Label selector of the importer pods. */
export const IMPORTER_POD_SELECTOR = `${CdiLabels.app}=${CdiLabels.appValue}`;

/** Registers the DataVolume, DataSource and StorageProfile controllers on `o.manager`. */
export function registerCdiControllers(o: CdiControllerOptions): void {
  const { manager } = o;
  const inf = manager.informers;
  const client = manager.client;
  const dvInf = inf.informerFor(DataVolumeType);
  const claimInf = inf.informerFor(PersistentVolumeClaimType);
  const podInf = inf.informerFor(PodType, { labelSelector: IMPORTER_POD_SELECTOR });
  const classInf = inf.informerFor(StorageClassType);
  const profileInf = inf.informerFor(StorageProfileType);
  const configInf = inf.informerFor(CDIConfigType);
  const dsInf = inf.informerFor(DataSourceType);
  const snapInf = o.snapshots ? inf.informerFor(VolumeSnapshotType) : undefined;
  const dataSources = lister<DataSource>(dsInf);
  const snapshots = snapInf ? lister<VolumeSnapshotObject>(snapInf) : undefined;
  const onError = (name: string) => (req: { namespace?: string; name: string }, err: Error) =>
    o.onError?.(name, req.namespace ? `${req.namespace}/${req.name}` : req.name, err);

  const dvLoop = manager.addController({
    name: 'datavolume',
    forType: DataVolumeType,
    workers: o.workers ?? 2,
    reconciler: asReconciler(
      new DataVolumeController({
        client,
        recorder: o.recorder,
        now: o.now,
        dataVolumes: lister<DataVolume>(dvInf),
        claims: lister<ClaimObject>(claimInf),
        pods: lister<Pod>(podInf),
        storageClasses: () => classInf.indexer.list() as StorageClassInfo[],
        storageProfiles: () => profileInf.indexer.list() as StorageProfile[],
        // CDI's one CDIConfig is named `config`.
        cdiConfig: () => configInf.indexer.get('config') as CDIConfig | undefined,
        cloner:
          o.clones === false
            ? undefined
            : new DataVolumeCloner({
                client,
                claims: lister<ClaimObject>(claimInf),
                dataVolumes: lister<DataVolume>(dvInf),
                dataSources,
                snapshots,
                storageClasses: () => classInf.indexer.list() as StorageClassInfo[],
                storageProfiles: () => profileInf.indexer.list() as StorageProfile[],
                overheadOf: (c) =>
                  filesystemOverhead(configInf.indexer.get('config') as CDIConfig | undefined, c),
                sourcePollMs: o.cloneSourcePollMs,
              }),
        importer: o.importer,
        retryDelayMs: o.retryDelayMs,
        uploadsRefused: o.uploadCerts
          ? undefined
          : (o.uploadsRefused ??
            'upload sources need the upload controller and cdi-uploadproxy, which do not run here: use an http or registry source'),
      }),
    ),
    onError: onError('datavolume'),
  });
  // A claim or importer pod changing: its DataVolume (same name / the claim's owner) looks again.
  const toDv = (obj: KubeObject) => {
    const ns = obj.metadata?.namespace;
    const ref = obj.metadata?.ownerReferences?.find((r) => r.controller);
    if (ref?.kind === 'DataVolume') dvLoop.queue.add(`${ns}/${ref.name}`);
    else if (ref?.kind === 'PersistentVolumeClaim') dvLoop.queue.add(`${ns}/${ref.name}`);
  };
  for (const i of [claimInf, podInf])
    i.addEventHandler({ onAdd: toDv, onUpdate: (_a, b) => toDv(b), onDelete: toDv });

  const dsLoop = manager.addController({
    name: 'datasource',
    forType: DataSourceType,
    workers: 1,
    reconciler: asReconciler(
      new DataSourceController({
        client,
        recorder: o.recorder,
        now: o.now,
        dataSources,
        claims: lister<ClaimObject>(claimInf),
        dataVolumes: lister<DataVolume>(dvInf),
        snapshots,
      }),
    ),
    onError: onError('datasource'),
  });
  // A source changing (a claim, a snapshot, a DataVolume filling a claim, a DataSource):
  // the DataSources and the clones not done yet look again (sources are named, not
  // indexed; there are few of either).
  const sourceChanged = (_obj: KubeObject) => {
    for (const d of dsInf.indexer.list()) dsLoop.queue.add(objectKey(d));
    for (const d of dvInf.indexer.list()) {
      const dv = d as DataVolume;
      if (isCloneDataVolume(dv) && dv.status?.phase !== 'Succeeded' && dv.status?.phase !== 'Failed')
        dvLoop.queue.add(objectKey(d));
    }
  };
  for (const i of [claimInf, dvInf, dsInf, ...(snapInf ? [snapInf] : [])])
    i.addEventHandler({
      onAdd: sourceChanged,
      onUpdate: (_a, b) => sourceChanged(b),
      onDelete: sourceChanged,
    });
  if (o.uploadCerts)
    registerUploadController(o, o.uploadCerts, { claimInf, podInf, dvInf, classInf, profileInf, configInf });
  registerConfigController(o, configInf);

  const profileLoop = manager.addController({
    name: 'storageprofile',
    forType: StorageClassType,
    workers: 1,
    reconciler: asReconciler(
      new StorageProfileController({
        client,
        recorder: o.recorder,
        storageClasses: lister(classInf),
        storageProfiles: lister<StorageProfile>(profileInf),
      }),
    ),
    onError: onError('storageprofile'),
  });
  // A profile edited (its spec) or deleted: its class's reconcile puts it right.
  const toClass = (p: KubeObject) => profileLoop.queue.add(objectKey(p));
  profileInf.addEventHandler({ onAdd: toClass, onUpdate: (_a, b) => toClass(b), onDelete: toClass });
  // A new profile status: DataVolumes still waiting for claim properties look again.
  profileInf.addEventHandler({
    onUpdate: () => {
      for (const dv of dvInf.indexer.list())
        if (!(dv as DataVolume).status?.claimName) dvLoop.queue.add(objectKey(dv));
    },
  });
}

type Inf = ReturnType<Manager['informers']['informerFor']>;

/** CDI's config controller on the CDIConfig `config`, woken by it and by the Ingresses of CDI's namespace. */
function registerConfigController(o: CdiControllerOptions, configInf: Inf): void {
  const { manager } = o;
  const ingInf = o.uploadProxyNamespace
    ? manager.informers.informerFor(IngressType, { namespace: o.uploadProxyNamespace })
    : undefined;
  const loop = manager.addController({
    name: 'cdiconfig',
    forType: CDIConfigType,
    workers: 1,
    reconciler: asReconciler(
      new CdiConfigController({
        client: manager.client,
        recorder: o.recorder,
        config: () => configInf.indexer.get(CDI_CONFIG_NAME) as CDIConfig | undefined,
        ingresses: () => (ingInf?.indexer.list() ?? []) as IngressObject[],
      }),
    ),
    onError: (req, err) => o.onError?.('cdiconfig', req.name, err),
  });
  // Made when missing: nothing else would wake the key.
  loop.queue.add(CDI_CONFIG_NAME);
  const wake = () => loop.queue.add(CDI_CONFIG_NAME);
  ingInf?.addEventHandler({ onAdd: wake, onUpdate: wake, onDelete: wake });
}

/**
 * The upload controller on PVCs (CDI's): its pods and Services by label, each pod's
 * change waking its claim. The disk size it tells the pod is the owning DataVolume's.
 */
function registerUploadController(
  o: CdiControllerOptions,
  certs: UploadCertIssuer,
  i: Record<'claimInf' | 'podInf' | 'dvInf' | 'classInf' | 'profileInf' | 'configInf', Inf>,
): void {
  const { manager } = o;
  const svcInf = manager.informers.informerFor(ServiceType, { labelSelector: IMPORTER_POD_SELECTOR });
  const config = () => i.configInf.indexer.get('config') as CDIConfig | undefined;
  const loop = manager.addController({
    name: 'upload',
    forType: PersistentVolumeClaimType,
    workers: 1,
    reconciler: asReconciler(
      new UploadController({
        client: manager.client,
        recorder: o.recorder,
        now: o.now,
        claims: lister<ClaimObject>(i.claimInf),
        pods: lister<Pod>(i.podInf),
        services: lister(svcInf),
        certs,
        image: o.importer,
        diskFor: (claim) => {
          const cls = claim.spec?.storageClassName;
          const overhead = claim.spec?.volumeMode === 'Block' ? 0 : filesystemOverhead(config(), cls);
          const ref = claim.metadata?.ownerReferences?.find((r) => r.controller && r.kind === 'DataVolume');
          const dv =
            ref &&
            (i.dvInf.indexer.get(`${claim.metadata?.namespace}/${ref.name}`) as DataVolume | undefined);
          if (!dv) return { overhead };
          const r = claimSpecFor(
            dv,
            i.classInf.indexer.list() as StorageClassInfo[],
            i.profileInf.indexer.list() as StorageProfile[],
            () => overhead,
          );
          return { overhead, imageSizeBytes: 'error' in r ? undefined : r.requestedBytes };
        },
      }),
    ),
    onError: (req, err) => o.onError?.('upload', `${req.namespace}/${req.name}`, err),
  });
  // An upload pod changing: its claim (the pod's owner) looks again.
  const toClaim = (obj: KubeObject) => {
    const ref = obj.metadata?.ownerReferences?.find((r) => r.controller);
    if (ref?.kind === 'PersistentVolumeClaim') loop.queue.add(`${obj.metadata?.namespace}/${ref.name}`);
  };
  for (const inf of [i.podInf, svcInf])
    inf.addEventHandler({ onAdd: toClaim, onUpdate: (_a, b) => toClaim(b), onDelete: toClaim });
}
