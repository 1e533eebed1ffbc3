/**
 * What a restore writes, as upstream's restore.go computes it: the names of the restored
 * claims by volumeRestorePolicy and overrides, the claims themselves (from the
 * VolumeSnapshots, as dataSource), and the restored VM (the snapshot's spec with its
 * volumes pointing at the restored claims, stopped, annotated with the restore).
 */
import type {
  VirtualMachine,
  VirtualMachineRestore,
  VolumeBackup,
  VolumeRestore,
} from '../../../api/generated/types';
import type { Pvc, VolumeSnapshot } from '../snapshot/resources';

export const RESTORE_NAME_ANNOTATION = 'restore.kubevirt.io/name';
export const LAST_RESTORE_ANNOTATION = 'restore.kubevirt.io/lastRestoreUID';
export const RESTORE_SOURCE_NAME_LABEL = 'restore.kubevirt.io/source-vm-name';
export const RESTORE_SOURCE_NAMESPACE_LABEL = 'restore.kubevirt.io/source-vm-namespace';
export const POPULATED_FOR_ANNOTATION = 'cdi.kubevirt.io/storage.populatedFor';
const CONTENT_TYPE_ANNOTATION = 'cdi.kubevirt.io/storage.contentType';
/** Annotation prefixes of the source claim a restored one does not inherit. */
const DROPPED_ANNOTATIONS = [
  'pv.kubernetes.io',
  'volume.beta.kubernetes.io',
  'cdi.kubevirt.io',
  'volume.kubernetes.io',
  'k8s.io/CloneRequest',
  'k8s.io/CloneOf',
];

export const VolumeRestorePolicy = {
  RandomizeNames: 'RandomizeNames',
  InPlace: 'InPlace',
  PrefixTargetName: 'PrefixTargetName',
} as const;

/** The value of the last-restore annotation: `<restore name>-<restore uid>`. */
export const lastRestoreValue = (r: VirtualMachineRestore) => `${r.metadata?.name}-${r.metadata?.uid}`;

export function hasLastRestore(
  r: VirtualMachineRestore,
  o: { metadata?: { annotations?: Record<string, string> } },
) {
  return o.metadata?.annotations?.[LAST_RESTORE_ANNOTATION] === lastRestoreValue(r);
}

/** upstream naming.GetName: `<base>-<suffix>`, shortened with a hash beyond `max`. */
function joinName(base: string, suffix: string, max = 63): string {
  const n = `${base}-${suffix}`;
  if (n.length <= max) return n;
  let h = 0;
  for (const c of n) h = (Math.imul(h, 31) + c.charCodeAt(0)) >>> 0;
  const hash = h.toString(16).padStart(8, '0');
  return `${n.slice(0, max - hash.length - 1)}-${hash}`;
}

/** The restored claim's (or DataVolume's) name of `volumeName`, whose source claim is `claimName`. */
export function restoreVolumeName(r: VirtualMachineRestore, volumeName: string, claimName: string): string {
  const o = r.spec.volumeRestoreOverrides?.find((x) => x.volumeName === volumeName && x.restoreName);
  if (o?.restoreName) return o.restoreName;
  switch (r.spec.volumeRestorePolicy) {
    case VolumeRestorePolicy.InPlace:
      return claimName;
    case VolumeRestorePolicy.PrefixTargetName:
      return joinName(r.spec.target.name, volumeName);
    default:
      return `restore-${r.metadata?.uid}-${volumeName}`;
  }
}

/** The claim restored from `backup`'s VolumeSnapshot. */
export function restorePvc(
  r: VirtualMachineRestore,
  name: string,
  backup: VolumeBackup,
  vs: VolumeSnapshot,
  sourceVm: { name?: string; namespace?: string },
): Pvc {
  const src = backup.persistentVolumeClaim as unknown as Pvc;
  const annotations: Record<string, string> = {};
  for (const [k, v] of Object.entries(src.metadata?.annotations ?? {})) {
    if (k !== CONTENT_TYPE_ANNOTATION && DROPPED_ANNOTATIONS.some((p) => k.startsWith(p))) continue;
    annotations[k] = v;
  }
  const labels: Record<string, string> = { ...(src.metadata?.labels ?? {}) };
  delete labels['restore.kubevirt.io/cleanup-backend-pvc'];
  labels[RESTORE_SOURCE_NAME_LABEL] = sourceVm.name ?? '';
  labels[RESTORE_SOURCE_NAMESPACE_LABEL] = sourceVm.namespace ?? '';
  annotations[RESTORE_NAME_ANNOTATION] = r.metadata?.name ?? '';
  annotations[LAST_RESTORE_ANNOTATION] = lastRestoreValue(r);
  const override = r.spec.volumeRestoreOverrides?.find((o) => o.volumeName === backup.volumeName);
  Object.assign(labels, override?.labels ?? {});
  Object.assign(annotations, override?.annotations ?? {});
  const requests = { ...(src.spec?.resources?.requests ?? {}) };
  // A snapshot bigger than the claim asked for (rounded up by the driver) needs that much.
  if (vs.status?.restoreSize && (!requests.storage || bytes(requests.storage) < bytes(vs.status.restoreSize)))
    requests.storage = vs.status.restoreSize;
  const ref = {
    apiGroup: 'snapshot.storage.k8s.io',
    kind: 'VolumeSnapshot',
    name: backup.volumeSnapshotName ?? '',
  };
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name, namespace: r.metadata?.namespace, labels, annotations },
    spec: {
      ...(src.spec?.accessModes ? { accessModes: src.spec.accessModes } : {}),
      resources: { requests },
      ...(src.spec?.storageClassName ? { storageClassName: src.spec.storageClassName } : {}),
      ...(src.spec?.volumeMode ? { volumeMode: src.spec.volumeMode } : {}),
      dataSource: ref,
      dataSourceRef: ref,
    },
  };
}

const UNITS: Record<string, number> = {
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  k: 1e3,
  M: 1e6,
  G: 1e9,
  T: 1e12,
  '': 1,
};
function bytes(q: string): number {
  const m = /^(\d+(?:\.\d+)?)([KMGT]i|[kMGT])?$/.exec(q);
  return m ? Number(m[1]) * (UNITS[m[2] ?? ''] ?? 1) : 0;
}

/**
 * The restored VM: the snapshot's spec with each restored volume on its restored claim (a
 * DataVolume volume with a template keeps a renamed template; without one it becomes a
 * PVC volume), stopped, carrying the last-restore annotation.
 */
export function restoredVm(
  r: VirtualMachineRestore,
  snapshotVm: VirtualMachine,
  target: VirtualMachine | undefined,
  restores: VolumeRestore[],
): VirtualMachine {
  const spec = structuredClone(snapshotVm.spec);
  const templates = spec.dataVolumeTemplates ?? [];
  const byVolume = new Map(restores.map((x) => [x.volumeName, x]));
  const tmpl = spec.template.spec;
  if (tmpl?.volumes) {
    tmpl.volumes = tmpl.volumes.map((v) => {
      const vr = byVolume.get(v.name);
      if (!vr) return v;
      if (v.persistentVolumeClaim)
        return {
          ...v,
          persistentVolumeClaim: { ...v.persistentVolumeClaim, claimName: vr.persistentVolumeClaim },
        };
      if (v.dataVolume) {
        const i = templates.findIndex((t) => t.metadata?.name === v.dataVolume!.name);
        if (i >= 0 && vr.dataVolumeName) {
          templates[i] = {
            ...templates[i]!,
            metadata: { ...templates[i]!.metadata, name: vr.dataVolumeName },
          };
          return { ...v, dataVolume: { ...v.dataVolume, name: vr.dataVolumeName } };
        }
        return { name: v.name, persistentVolumeClaim: { claimName: vr.persistentVolumeClaim } };
      }
      return v;
    });
  }
  if (spec.dataVolumeTemplates) spec.dataVolumeTemplates = templates;
  const keepRunning = (target ?? snapshotVm).spec;
  if (keepRunning.running !== undefined) {
    spec.running = false;
    delete spec.runStrategy;
  } else {
    // The target keeps its own run strategy (a new VM is created Halted).
    spec.runStrategy = target ? (target.spec.runStrategy ?? 'Halted') : 'Halted';
    delete spec.running;
  }
  const base: VirtualMachine = target
    ? { ...structuredClone(target), spec }
    : {
        apiVersion: 'kubevirt.io/v1',
        kind: 'VirtualMachine',
        metadata: {
          name: r.spec.target.name,
          namespace: r.metadata?.namespace,
          labels: snapshotVm.metadata?.labels,
          annotations: snapshotVm.metadata?.annotations,
        },
        spec,
      };
  base.metadata = {
    ...base.metadata,
    annotations: { ...(base.metadata?.annotations ?? {}), [LAST_RESTORE_ANNOTATION]: lastRestoreValue(r) },
  };
  return base;
}
