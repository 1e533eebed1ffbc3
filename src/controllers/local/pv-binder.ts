/**
 * Static PersistentVolume binding for a control plane without kube-controller-manager
 * (local mode): each Pending PersistentVolumeClaim is bound to a PersistentVolume the way
 * the PV controller's static binding does it, so a VM's PVC disk can start there.
 * - A claim naming a volume (`spec.volumeName`) binds to it when the volume exists and is
 *   not claimed by another claim.
 * - Otherwise the smallest Available volume that fits: same storage class (both unset, or
 *   equal), same volume mode (Filesystem by default), every requested access mode offered,
 *   capacity at least the claim's request.
 * Binding writes the volume's `claimRef` first, then the claim's `volumeName`, then both
 * statuses (Bound), so a volume is never given to two claims. No dynamic provisioning here:
 * a claim nothing fits stays Pending until a volume that fits appears, except that a claim
 * naming no class then gets the default class, as the PV controller assigns it
 * (./default-storage-class), and the class's provisioner takes it from there.
 */

import { bytesOf } from '../common/quantity';
import { NotFoundError } from '../runtime/errors';
import type { Informer } from '../runtime/informer';
import { Manager } from '../runtime/manager';
import { PersistentVolumeClaimType, PersistentVolumeType, StorageClassType } from '../runtime/resources';
import type { KubeObject, ObjectClient } from '../runtime/types';
import { claimNamesNoClass, defaultStorageClass } from './default-storage-class';

/** The fields of a claim the binder reads and writes. */
export interface ClaimObject extends KubeObject {
  metadata?: KubeObject['metadata'] & { annotations?: Record<string, string> };
  spec?: {
    volumeName?: string;
    storageClassName?: string;
    volumeMode?: string;
    accessModes?: string[];
    resources?: { requests?: { storage?: string } };
  };
  status?: { phase?: string; capacity?: Record<string, string>; accessModes?: string[] };
}

/** The fields of a volume the binder reads and writes. */
export interface VolumeObject extends KubeObject {
  spec?: {
    claimRef?: { apiVersion?: string; kind?: string; namespace?: string; name?: string; uid?: string };
    storageClassName?: string;
    volumeMode?: string;
    accessModes?: string[];
    capacity?: { storage?: string };
  };
  status?: { phase?: string };
}

/** Options of {@link PvBinder}. */
export interface PvBinderOptions {
  client: ObjectClient;
  log?: (message: string) => void;
}

const bytes = (q: string | undefined, field: string) => {
  try {
    return bytesOf(q, field) ?? 0n;
  } catch {
    return -1n; // unparsable: fits nothing, is offered nothing
  }
};

/** Whether `pv` is free for `pvc` or already promised to it. */
function claimableBy(pv: VolumeObject, pvc: ClaimObject): boolean {
  const ref = pv.spec?.claimRef;
  if (!ref) return true;
  return (
    ref.namespace === pvc.metadata?.namespace &&
    ref.name === pvc.metadata?.name &&
    (!ref.uid || ref.uid === pvc.metadata?.uid)
  );
}

/** Whether `pv` satisfies what `pvc` asks for (class, mode, access modes, size). */
export function volumeFits(pv: VolumeObject, pvc: ClaimObject): boolean {
  if ((pv.spec?.storageClassName ?? '') !== (pvc.spec?.storageClassName ?? '')) return false;
  if ((pv.spec?.volumeMode ?? 'Filesystem') !== (pvc.spec?.volumeMode ?? 'Filesystem')) return false;
  const offered = new Set(pv.spec?.accessModes ?? []);
  if (!(pvc.spec?.accessModes ?? []).every((m) => offered.has(m))) return false;
  const want = bytes(pvc.spec?.resources?.requests?.storage, 'spec.resources.requests.storage');
  const have = bytes(pv.spec?.capacity?.storage, 'spec.capacity.storage');
  return want >= 0n && have >= want;
}

/** The volume `pvc` should bind to now, if any (see the module comment). */
export function chooseVolume(pvc: ClaimObject, volumes: readonly VolumeObject[]): VolumeObject | undefined {
  const named = pvc.spec?.volumeName;
  if (named) {
    const pv = volumes.find((v) => v.metadata?.name === named);
    return pv && claimableBy(pv, pvc) ? pv : undefined;
  }
  // A volume already promised to this claim (an earlier pass stopped half way) wins.
  const promised = volumes.find((v) => v.spec?.claimRef && claimableBy(v, pvc) && volumeFits(v, pvc));
  if (promised) return promised;
  return volumes
    .filter(
      (v) => !v.spec?.claimRef && (v.status?.phase ?? 'Available') === 'Available' && volumeFits(v, pvc),
    )
    .sort(
      (a, b) =>
        Number(bytes(a.spec?.capacity?.storage, '') - bytes(b.spec?.capacity?.storage, '')) ||
        String(a.metadata?.name).localeCompare(String(b.metadata?.name)),
    )[0];
}

/** Binds Pending claims to volumes; see the module comment. */
export class PvBinder {
  private readonly manager: Manager;
  private readonly volumes: Informer<KubeObject>;
  private readonly claims: Informer<KubeObject>;
  private readonly classes: Informer<KubeObject>;
  private readonly log: (m: string) => void;

  constructor(private readonly o: PvBinderOptions) {
    this.log = o.log ?? (() => {});
    this.manager = new Manager({ client: o.client });
    this.volumes = this.manager.informers.informerFor(PersistentVolumeType);
    this.classes = this.manager.informers.informerFor(StorageClassType);
    const waiting = () =>
      (this.claims.indexer.list() as ClaimObject[])
        .filter((c) => c.status?.phase !== 'Bound')
        .map((c) => ({ namespace: c.metadata?.namespace, name: c.metadata?.name ?? '' }));
    const controller = this.manager.addController({
      name: 'pv-binder',
      forType: PersistentVolumeClaimType,
      // A new or freed volume may fit any claim still waiting; a new default class may
      // be the one a waiting claim that names none gets.
      watches: [
        { type: PersistentVolumeType, map: waiting },
        { type: StorageClassType, map: waiting },
      ],
      reconciler: { reconcile: (req) => this.reconcile(`${req.namespace}/${req.name}`) },
      onError: (req, err) => this.log(`${req.namespace}/${req.name}: ${err.message}`),
    });
    this.claims = controller.informer;
  }

  async start(): Promise<void> {
    await this.manager.start();
  }

  async stop(): Promise<void> {
    await this.manager.stop();
  }

  private async reconcile(key: string): Promise<undefined> {
    const pvc = this.claims.indexer.get(key) as ClaimObject | undefined;
    if (!pvc || pvc.metadata?.deletionTimestamp || pvc.status?.phase === 'Bound') return undefined;
    const pv = chooseVolume(pvc, this.volumes.indexer.list() as VolumeObject[]);
    if (pv) await this.bind(pvc, pv);
    else if (!pvc.spec?.volumeName && claimNamesNoClass(pvc)) await this.assignDefaultClass(pvc);
    return undefined;
  }

  /** Writes the default class into a claim that names none (the PV controller's assignDefaultStorageClass). */
  private async assignDefaultClass(pvc: ClaimObject): Promise<void> {
    const sc = defaultStorageClass(this.classes.indexer.list());
    if (!sc) return;
    try {
      await this.o.client.update<ClaimObject>(PersistentVolumeClaimType, {
        ...pvc,
        spec: { ...pvc.spec, storageClassName: sc.metadata?.name },
      });
    } catch (err) {
      if (err instanceof NotFoundError) return;
      throw err;
    }
    this.log(
      `assigned the default StorageClass ${sc.metadata?.name} to PersistentVolumeClaim ${pvc.metadata?.namespace}/${pvc.metadata?.name}`,
    );
  }

  private async bind(pvc: ClaimObject, pv: VolumeObject): Promise<void> {
    const { client } = this.o;
    const ns = pvc.metadata?.namespace;
    const name = pvc.metadata?.name ?? '';
    const pvName = pv.metadata?.name ?? '';
    let boundPv = pv;
    if (!pv.spec?.claimRef?.uid) {
      // The volume first: a conflict here means someone else took it; the retry re-chooses.
      boundPv = await client.update<VolumeObject>(PersistentVolumeType, {
        ...pv,
        spec: {
          ...pv.spec,
          claimRef: {
            apiVersion: 'v1',
            kind: 'PersistentVolumeClaim',
            namespace: ns,
            name,
            uid: pvc.metadata?.uid,
          },
        },
      });
    }
    if (boundPv.status?.phase !== 'Bound')
      await client.updateStatus(PersistentVolumeType, {
        ...boundPv,
        status: { ...boundPv.status, phase: 'Bound' },
      });
    let claim = pvc;
    if (pvc.spec?.volumeName !== pvName) {
      claim = await client.update<ClaimObject>(PersistentVolumeClaimType, {
        ...pvc,
        spec: { ...pvc.spec, volumeName: pvName },
      });
    }
    try {
      await client.updateStatus(PersistentVolumeClaimType, {
        ...claim,
        status: {
          ...claim.status,
          phase: 'Bound',
          accessModes: pv.spec?.accessModes,
          capacity: pv.spec?.capacity?.storage ? { storage: pv.spec.capacity.storage } : undefined,
        },
      });
    } catch (err) {
      if (err instanceof NotFoundError) return; // the claim went away meanwhile
      throw err;
    }
    this.log(`bound PersistentVolumeClaim ${ns}/${name} to PersistentVolume ${pvName}`);
  }
}
