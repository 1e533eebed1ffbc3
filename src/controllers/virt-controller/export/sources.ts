/**
 * What a VirtualMachineExport's source offers (upstream's pvc-source.go, vm-source.go and
 * vmsnapshot-source.go): the claims to serve, whether each holds a disk image (served as
 * `disk.img`) or files (served as a tar and a directory), and whether the source can be
 * exported now: populated (a DataVolume's claim once it Succeeded), and not in use (a PVC
 * mounted by another pod, a VM whose VMI runs). An unavailable source has its exporter pod
 * stopped (upstream's ExportPaused) until it is available again. A VMSnapshot's volumes are
 * first restored into claims `<export>-<claim>` owned by the export.
 */
import type { DataVolume } from '../../../api/generated/cdi/types';
import type {
  VirtualMachine,
  VirtualMachineExport,
  VirtualMachineInstance,
  VirtualMachineSnapshot,
  VirtualMachineSnapshotContent,
} from '../../../api/generated/types';
import type { Lister } from '../../common/controller-ports';
import { controllerRef } from '../../common/owner-ref';
import type { Pod } from '../../common/pod';
import type { Pvc, VolumeSnapshot } from '../snapshot/resources';

/** CDI's content type annotation on a claim. */
export const CONTENT_TYPE_ANNOTATION = 'cdi.kubevirt.io/storage.contentType';

/** A claim to serve. */
export interface SourceVolume {
  claim: Pvc;
  /** A disk image (raw/gzip) rather than files (tar/dir). */
  diskImage: boolean;
}

/** An export's Ready condition as the source sees it. */
export interface SourceCondition {
  type: string;
  status: 'True' | 'False';
  reason: string;
  message: string;
}

/** The source's state. */
export interface SourceState {
  volumes: SourceVolume[];
  /** Exportable now (populated and not in use). */
  available: boolean;
  /** The Ready condition while no exporter pod runs. */
  ready: SourceCondition;
  /** A source condition of its own (PVCReady, VolumesCreated), if the kind has one. */
  extra?: SourceCondition;
  /** The VM the export is of (VM and VMSnapshot sources): its manifest is served. */
  vm?: VirtualMachine;
  vmName?: string;
  /** Claims to create (a VMSnapshot's restores). */
  toCreate: Pvc[];
}

/** What the sources read. */
export interface SourceListers {
  claims: Lister<Pvc>;
  vms: Lister<VirtualMachine>;
  vmis: Lister<VirtualMachineInstance>;
  dataVolumes?: Lister<DataVolume>;
  snapshots?: Lister<VirtualMachineSnapshot>;
  contents?: Lister<VirtualMachineSnapshotContent>;
  volumeSnapshots?: Lister<VolumeSnapshot>;
  /** The pods of a namespace (PVC sources: is the claim in use?). */
  podsIn: (namespace: string) => Promise<Pod[]>;
}

const cond = (reason: string, message = '', type = 'Ready', status: 'True' | 'False' = 'False') => ({
  type,
  status,
  reason,
  message,
});

function owningDataVolume(claim: Pvc, l: SourceListers): DataVolume | undefined {
  const ref = claim.metadata?.ownerReferences?.find((o) => o.kind === 'DataVolume' && o.controller);
  return ref ? l.dataVolumes?.get(`${claim.metadata?.namespace}/${ref.name}`) : undefined;
}

/** upstream's isKubevirtContentType: block claims, `kubevirt` (or empty) content type, or such a DataVolume's claim. */
export function holdsDiskImage(claim: Pvc, l: SourceListers): boolean {
  if (claim.spec?.volumeMode === 'Block') return true;
  const ct = claim.metadata?.annotations?.[CONTENT_TYPE_ANNOTATION];
  if (ct === 'kubevirt' || ct === '') return true;
  const dv = owningDataVolume(claim, l);
  return dv !== undefined && (dv.spec.contentType ?? 'kubevirt') === 'kubevirt';
}

/** upstream's cdiv1.IsPopulated: a DataVolume's claim once the DataVolume Succeeded; any other claim. */
function populated(claim: Pvc, l: SourceListers): boolean {
  const ref = claim.metadata?.ownerReferences?.find((o) => o.kind === 'DataVolume' && o.controller);
  if (!ref) return true;
  return owningDataVolume(claim, l)?.status?.phase === 'Succeeded';
}

const toVolumes = (claims: Pvc[], l: SourceListers) =>
  claims.map((claim) => ({ claim, diskImage: holdsDiskImage(claim, l) }));

/** True when a pod other than the export's own uses `claim`. */
function claimInUse(claim: string, pods: Pod[], exportUid: string): boolean {
  return pods.some(
    (p) =>
      !['Succeeded', 'Failed'].includes(p.status?.phase ?? '') &&
      !p.metadata?.ownerReferences?.some((o) => o.uid === exportUid) &&
      p.spec?.volumes?.some((v) => v.persistentVolumeClaim?.claimName === claim),
  );
}

async function pvcSource(e: VirtualMachineExport, l: SourceListers): Promise<SourceState> {
  const ns = e.metadata?.namespace ?? '';
  const name = e.spec.source.name;
  const claim = l.claims.get(`${ns}/${name}`);
  if (!claim)
    return {
      volumes: [],
      available: false,
      ready: cond('Initializing'),
      extra: cond('PVCNotFound', `PersistentVolumeClaim ${ns}/${name} not found`, 'PVCReady'),
      toCreate: [],
    };
  const phase = claim.status?.phase;
  const extra =
    phase === 'Bound'
      ? cond('PVCBound', '', 'PVCReady', 'True')
      : cond(phase === 'Lost' ? 'Unknown' : 'PVCPending', '', 'PVCReady');
  const base = { volumes: toVolumes([claim], l), extra, toCreate: [] };
  if (!populated(claim, l))
    return {
      ...base,
      available: false,
      ready: cond('PVCPending', `PersistentVolumeClaim ${ns}/${name} is not populated`),
    };
  if (claimInUse(name, await l.podsIn(ns), e.metadata?.uid ?? ''))
    return {
      ...base,
      available: false,
      ready: cond('InUse', `PersistentVolumeClaim ${ns}/${name} is in use`),
    };
  return { ...base, available: true, ready: cond('Initializing') };
}

/** The claim names of a VM's volumes (persistentVolumeClaim and dataVolume). */
export function vmClaimNames(vm: VirtualMachine): Array<{ claim: string; dataVolume: boolean }> {
  return (vm.spec.template?.spec?.volumes ?? []).flatMap(
    (v): Array<{ claim: string; dataVolume: boolean }> =>
      v.persistentVolumeClaim
        ? [{ claim: v.persistentVolumeClaim.claimName, dataVolume: false }]
        : v.dataVolume
          ? [{ claim: v.dataVolume.name, dataVolume: true }]
          : [],
  );
}

function vmSource(e: VirtualMachineExport, l: SourceListers): SourceState {
  const ns = e.metadata?.namespace ?? '';
  const name = e.spec.source.name;
  const vm = l.vms.get(`${ns}/${name}`);
  if (!vm)
    return {
      volumes: [],
      available: false,
      ready: cond('VMNotFound', `Virtual Machine ${ns}/${name} not found`),
      vmName: name,
      toCreate: [],
    };
  const claims: Pvc[] = [];
  let allPopulated = true;
  for (const { claim, dataVolume } of vmClaimNames(vm)) {
    const c = l.claims.get(`${ns}/${claim}`);
    if (c) {
      claims.push(c);
      if (!populated(c, l)) allPopulated = false;
    } else if (dataVolume) allPopulated = false;
  }
  const base = { volumes: toVolumes(claims, l), vm, vmName: name, toCreate: [] };
  if (!claims.length && allPopulated)
    return {
      ...base,
      available: true,
      ready: cond('VMNoVolumes', `Virtual Machine ${ns}/${name} has no volumes`),
    };
  if (!allPopulated)
    return {
      ...base,
      available: false,
      ready: cond(
        'VolumesNotPopulated',
        `Not all volumes in the Virtual Machine ${ns}/${name} are populated`,
      ),
    };
  const vmi = l.vmis.get(`${ns}/${name}`);
  if (vmi && vmi.status?.phase !== 'Succeeded' && vmi.status?.phase !== 'Failed')
    return { ...base, available: false, ready: cond('InUse', `Virtual Machine ${ns}/${name} is running`) };
  return { ...base, available: true, ready: cond('Initializing') };
}

/** The claim restoring `backup` for export `e` (upstream: `<export>-<claim>`, owned by the export). */
function restoreClaim(
  e: VirtualMachineExport,
  backup: NonNullable<VirtualMachineSnapshotContent['spec']['volumeBackups']>[number],
  vs: VolumeSnapshot | undefined,
  diskImage: boolean,
): Pvc {
  const src = backup.persistentVolumeClaim;
  const ref = {
    apiGroup: 'snapshot.storage.k8s.io',
    kind: 'VolumeSnapshot',
    name: backup.volumeSnapshotName ?? '',
  };
  const requests: Record<string, string> = {
    ...((src.spec?.resources?.requests as Record<string, string>) ?? {}),
  };
  if (vs?.status?.restoreSize && !requests.storage) requests.storage = vs.status.restoreSize;
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      name: `${e.metadata?.name}-${src.metadata?.name}`,
      namespace: e.metadata?.namespace,
      ...(diskImage ? { annotations: { [CONTENT_TYPE_ANNOTATION]: 'kubevirt' } } : {}),
      ownerReferences: [controllerRef('export.kubevirt.io/v1', 'VirtualMachineExport', e)],
    },
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

function snapshotSource(e: VirtualMachineExport, l: SourceListers): SourceState {
  const ns = e.metadata?.namespace ?? '';
  const name = e.spec.source.name;
  const snap = l.snapshots?.get(`${ns}/${name}`);
  const none = { volumes: [], available: false, toCreate: [] };
  if (!snap)
    return {
      ...none,
      ready: cond('VMSnapshotNotFound', `VirtualMachineSnapshot ${ns}/${name} not found`),
      extra: cond(
        'VMSnapshotNoVolumes',
        `VirtualMachineSnapshot ${ns}/${name} does not contain any volume snapshots`,
        'VolumesCreated',
      ),
    };
  const vmName = snap.spec.source.name;
  const content = snap.status?.virtualMachineSnapshotContentName
    ? l.contents?.get(`${ns}/${snap.status.virtualMachineSnapshotContentName}`)
    : undefined;
  if (!snap.status?.readyToUse || !content) {
    const msg = `VirtualMachineSnapshot ${ns}/${name} is not ready to use`;
    return {
      ...none,
      vmName,
      ready: cond('NotAllPVCsCreated', msg),
      extra: cond('NotAllPVCsCreated', msg, 'VolumesCreated'),
    };
  }
  const sourceVm = content.spec.source.virtualMachine as VirtualMachine | undefined;
  const diskVolumes = new Set(
    (sourceVm?.spec?.template?.spec?.volumes ?? [])
      .filter((v) => v.dataVolume || v.persistentVolumeClaim)
      .map((v) => v.name),
  );
  const backups = (content.spec.volumeBackups ?? []).filter((b) => b.volumeSnapshotName);
  if (!backups.length)
    return {
      ...none,
      vmName,
      available: true,
      ready: cond('Initializing'),
      extra: cond(
        'VMSnapshotNoVolumes',
        `VirtualMachineSnapshot ${ns}/${name} does not contain any volume snapshots`,
        'VolumesCreated',
      ),
    };
  const claims: Pvc[] = [];
  const toCreate: Pvc[] = [];
  for (const b of backups) {
    const want = restoreClaim(
      e,
      b,
      l.volumeSnapshots?.get(`${ns}/${b.volumeSnapshotName}`),
      diskVolumes.has(b.volumeName),
    );
    const have = l.claims.get(`${ns}/${want.metadata?.name}`);
    if (have) claims.push(have);
    else toCreate.push(want);
  }
  const allBound = !toCreate.length && claims.every((c) => c.status?.phase === 'Bound');
  const vm = sourceVm
    ? ({ ...sourceVm, metadata: { ...sourceVm.metadata, name: vmName, namespace: ns } } as VirtualMachine)
    : undefined;
  return {
    volumes: toVolumes(claims, l),
    available: !toCreate.length,
    vm,
    vmName,
    toCreate,
    ready: toCreate.length
      ? cond('NotAllPVCsCreated', 'Not all PVCs have been successfully restored')
      : cond('Initializing'),
    extra: allBound
      ? cond('AllPVCsReady', '', 'VolumesCreated', 'True')
      : cond('NotAllPVCsReady', 'Not all PVCs are ready', 'VolumesCreated'),
  };
}

/** The state of `e`'s source (the kind is assumed valid: see validateVmExportSpec). */
export async function resolveSource(e: VirtualMachineExport, l: SourceListers): Promise<SourceState> {
  switch (e.spec.source.kind) {
    case 'PersistentVolumeClaim':
      return pvcSource(e, l);
    case 'VirtualMachine':
      return vmSource(e, l);
    default:
      return snapshotSource(e, l);
  }
}
