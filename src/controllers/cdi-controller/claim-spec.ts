/**
 * The PersistentVolumeClaim a DataVolume asks for (CDI's renderPvcSpec): `spec.pvc` as
 * written; `spec.storage` completed from the cluster: the storage class (the default virt
 * class, else the default class), access and volume modes from the class's StorageProfile,
 * and the size grown by the filesystem overhead for Filesystem volumes, so the disk image
 * the DataVolume asked for fits beside the filesystem's own metadata.
 */
import type { ClaimPropertySet, DataVolume, StorageProfile } from '../../api/generated/cdi/types';
import { bytesOf } from '../common/quantity';

/** KubeVirt's annotation for the StorageClass its VMs' DataVolumes use by default. */
export const DEFAULT_VIRT_CLASS_ANNOTATION = 'storageclass.kubevirt.io/is-default-virt-class';
/** Kubernetes' default-class annotation. */
export const DEFAULT_CLASS_ANNOTATION = 'storageclass.kubernetes.io/is-default-class';
/** CDI's default global filesystem overhead. */
export const DEFAULT_FILESYSTEM_OVERHEAD = 0.06;
/** CDI aligns requested sizes to 1 MiB before adding the overhead. */
const ALIGN = 1024 * 1024;

/** The parts of a StorageClass read here. */
export interface StorageClassInfo {
  metadata?: { name?: string; annotations?: Record<string, string> };
  provisioner?: string;
  volumeBindingMode?: string;
}

/** The claim spec written to the PVC. */
export interface ClaimSpec {
  accessModes: string[];
  volumeMode: 'Filesystem' | 'Block';
  storageClassName?: string;
  resources: { requests: { storage: string } };
  selector?: unknown;
  volumeName?: string;
}

/** A claim spec, or why none can be made (field path and message). */
export type ClaimSpecResult =
  | { spec: ClaimSpec; requestedBytes: number; overhead: number }
  | { error: { path: string; message: string } };

/** The class a DataVolume without storageClassName gets: default virt class, else default class. */
export function defaultStorageClass(classes: readonly StorageClassInfo[]): StorageClassInfo | undefined {
  const byName = [...classes].sort((a, b) => (a.metadata?.name ?? '').localeCompare(b.metadata?.name ?? ''));
  return (
    byName.find((c) => c.metadata?.annotations?.[DEFAULT_VIRT_CLASS_ANNOTATION] === 'true') ??
    byName.find((c) => c.metadata?.annotations?.[DEFAULT_CLASS_ANNOTATION] === 'true')
  );
}

/** CDI's GetRequiredSpace: align to 1 MiB, then divide by (1 - overhead), rounded up. */
export function requiredSpace(bytes: number, overhead: number): number {
  const aligned = Math.ceil(bytes / ALIGN) * ALIGN;
  return Math.ceil(aligned / (1 - overhead));
}

type Overheads = { global?: string; storageClass?: Record<string, string> };

/**
 * The filesystem overhead for a class: the CDIConfig's (spec, which a user sets, over
 * status, which CDI computes), per class, else global, else 6%.
 */
export function filesystemOverhead(
  cdiConfig:
    | { spec?: { filesystemOverhead?: Overheads }; status?: { filesystemOverhead?: Overheads } }
    | undefined,
  className: string | undefined,
): number {
  const spec = cdiConfig?.spec?.filesystemOverhead;
  const status = cdiConfig?.status?.filesystemOverhead;
  const text =
    (className && (spec?.storageClass?.[className] ?? status?.storageClass?.[className])) ||
    spec?.global ||
    status?.global;
  const n = text !== undefined ? Number(text) : Number.NaN;
  return n >= 0 && n < 1 ? n : DEFAULT_FILESYSTEM_OVERHEAD;
}

/** Renders the claim spec of `dv`. */
export function claimSpecFor(
  dv: DataVolume,
  classes: readonly StorageClassInfo[],
  profiles: readonly StorageProfile[],
  overheadOf: (className: string | undefined) => number,
): ClaimSpecResult {
  const s = dv.spec;
  const target = s.pvc ?? s.storage;
  const base = s.pvc ? 'spec.pvc' : 'spec.storage';
  const sizeText = target?.resources?.requests?.storage;
  let requested: number;
  try {
    const b = bytesOf(sizeText, `${base}.resources.requests.storage`);
    if (b === undefined) throw new Error('Required value: the size of the volume');
    requested = Number(b);
  } catch (err) {
    return { error: { path: `${base}.resources.requests.storage`, message: (err as Error).message } };
  }
  if (!(requested > 0))
    return {
      error: { path: `${base}.resources.requests.storage`, message: `${sizeText} is not a positive size` },
    };

  let className = target?.storageClassName;
  if (className === undefined || (className === '' && !s.pvc))
    className = defaultStorageClass(classes)?.metadata?.name;
  if (className && !s.pvc && !classes.some((c) => c.metadata?.name === className))
    return {
      error: {
        path: `${base}.storageClassName`,
        message: `StorageClass ${JSON.stringify(className)} not found`,
      },
    };

  if (s.pvc) {
    const volumeMode = s.pvc.volumeMode === 'Block' ? 'Block' : 'Filesystem';
    if (!s.pvc.accessModes?.length)
      return { error: { path: 'spec.pvc.accessModes', message: 'Required value: at least one access mode' } };
    return {
      spec: {
        accessModes: [...s.pvc.accessModes],
        volumeMode,
        ...(className ? { storageClassName: className } : {}),
        resources: { requests: { storage: String(sizeText) } },
        ...(s.pvc.selector ? { selector: s.pvc.selector } : {}),
        ...(s.pvc.volumeName ? { volumeName: s.pvc.volumeName } : {}),
      },
      requestedBytes: requested,
      overhead: volumeMode === 'Filesystem' ? overheadOf(className) : 0,
    };
  }

  const storage = s.storage!;
  const profile = profiles.find((p) => p.metadata?.name === className);
  const sets: ClaimPropertySet[] = profile?.status?.claimPropertySets ?? [];
  const wantedMode = storage.volumeMode as 'Filesystem' | 'Block' | 'FromStorageProfile' | undefined;
  const explicitMode = wantedMode === 'Filesystem' || wantedMode === 'Block' ? wantedMode : undefined;
  let accessModes = storage.accessModes?.length ? [...storage.accessModes] : undefined;
  let volumeMode = explicitMode;
  if (!accessModes || !volumeMode) {
    const set =
      sets.find((p) => !volumeMode || p.volumeMode === volumeMode) ?? (accessModes ? undefined : sets[0]);
    accessModes ??= set ? [...set.accessModes] : undefined;
    volumeMode ??= (set?.volumeMode as 'Filesystem' | 'Block' | undefined) ?? 'Filesystem';
  }
  if (!accessModes)
    return {
      error: {
        path: 'spec.storage.accessModes',
        message: `DataVolume.storage spec is missing accessMode and no StorageProfile for class ${JSON.stringify(className ?? '')} has claimPropertySets to take it from`,
      },
    };
  const overhead = volumeMode === 'Filesystem' ? overheadOf(className) : 0;
  const size = volumeMode === 'Filesystem' ? requiredSpace(requested, overhead) : requested;
  return {
    spec: {
      accessModes,
      volumeMode,
      ...(className ? { storageClassName: className } : {}),
      resources: { requests: { storage: String(size) } },
      ...(storage.selector ? { selector: storage.selector } : {}),
      ...(storage.volumeName ? { volumeName: storage.volumeName } : {}),
    },
    requestedBytes: requested,
    overhead,
  };
}
