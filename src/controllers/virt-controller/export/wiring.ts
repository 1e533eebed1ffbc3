/**
 * Registers the VirtualMachineExport controller on virt-controller's Manager (the
 * composition root does, as it does CDI's): exports are reconciled on their own changes,
 * their exporter pods' (label kubevirt.io=virt-exporter), and those of the VMs, VMIs,
 * claims, DataVolumes and VirtualMachineSnapshots of their namespace that they export,
 * and every export on a change of the install namespace's Ingresses (their external link).
 */
import type { DataVolume } from '../../../api/generated/cdi/types';
import type {
  VirtualMachine,
  VirtualMachineExport,
  VirtualMachineInstance,
  VirtualMachineSnapshot,
  VirtualMachineSnapshotContent,
} from '../../../api/generated/types';
import type { EventRecorder } from '../../common/controller-ports';
import { asReconciler, lister, ownerKey } from '../../common/controller-wiring';
import type { IngressObject } from '../../common/ingress';
import type { Pod } from '../../common/pod';
import { VmiResource } from '../../common/vmi-resource';
import { NotFoundError } from '../../runtime/errors';
import type { Informer } from '../../runtime/informer';
import type { Manager } from '../../runtime/manager';
import {
  DataVolumeType,
  IngressType,
  objectKey,
  PersistentVolumeClaimType,
  PodType,
  SecretType,
  VirtualMachineType,
} from '../../runtime/resources';
import type { KubeObject, ObjectClient } from '../../runtime/types';
import {
  type Pvc,
  VirtualMachineSnapshotContentType,
  VirtualMachineSnapshotType,
  type VolumeSnapshot,
  VolumeSnapshotType,
} from '../snapshot/resources';
import { type ExportCertIssuer, VmExportController } from './export-controller';
import { EXPORTER_APP, EXPORTER_APP_LABEL } from './exporter-pod';
import { certForHost, exportProxyIngress } from './external-link';
import { vmClaimNames } from './sources';
import { VirtualMachineExportType } from './types';

export interface ExportControllerOptions {
  manager: Manager;
  recorder: EventRecorder;
  certs: ExportCertIssuer;
  /** The exporter pods' image (the launcher's: it has the server's bundle). */
  image: string;
  /** Watch VirtualMachineSnapshots (their CRDs are served): VMSnapshot sources work. */
  snapshots: boolean;
  /**
   * The install namespace: its Ingresses to `virt-exportproxy` give the external links, the
   * TLS Secret they name the certificate. Unset: no external links (local mode).
   */
  installNamespace?: string;
  workers?: number;
  onError?: (controller: string, key: string, err: Error) => void;
}

/** Registers the controller; returns nothing (the Manager starts it). */
export function registerExportController(o: ExportControllerOptions): void {
  const { manager } = o;
  const inf = manager.informers;
  const client = manager.client;
  const exportInf = inf.informerFor(VirtualMachineExportType);
  const podInf = inf.informerFor(PodType, { labelSelector: `${EXPORTER_APP_LABEL}=${EXPORTER_APP}` });
  const vmInf = inf.informerFor(VirtualMachineType);
  const vmiInf = inf.informerFor(VmiResource);
  const claimInf = inf.informerFor(PersistentVolumeClaimType);
  const dvInf = inf.informerFor(DataVolumeType);
  const snapInf = o.snapshots ? inf.informerFor(VirtualMachineSnapshotType) : undefined;
  const contentInf = o.snapshots ? inf.informerFor(VirtualMachineSnapshotContentType) : undefined;
  const vsInf = o.snapshots ? inf.informerFor(VolumeSnapshotType) : undefined;
  const ingInf = o.installNamespace
    ? inf.informerFor(IngressType, { namespace: o.installNamespace })
    : undefined;
  const loop = manager.addController({
    name: 'vmexport',
    forType: VirtualMachineExportType,
    workers: o.workers ?? 2,
    reconciler: asReconciler(
      new VmExportController({
        client,
        recorder: o.recorder,
        certs: o.certs,
        external: ingInf && externalFrom(client, o.installNamespace!, ingInf),
        image: o.image,
        exports: lister<VirtualMachineExport>(exportInf),
        exporterPods: lister<Pod>(podInf),
        claims: lister<Pvc>(claimInf),
        vms: lister<VirtualMachine>(vmInf),
        vmis: lister<VirtualMachineInstance>(vmiInf),
        dataVolumes: lister<DataVolume>(dvInf),
        snapshots: snapInf && lister<VirtualMachineSnapshot>(snapInf),
        contents: contentInf && lister<VirtualMachineSnapshotContent>(contentInf),
        volumeSnapshots: vsInf && lister<VolumeSnapshot>(vsInf),
        podsIn: async (namespace) => (await client.list<Pod & KubeObject>(PodType, { namespace })).items,
      }),
    ),
    onError: (req, err) => o.onError?.('vmexport', `${req.namespace}/${req.name}`, err),
  });
  const on = (i: Informer<KubeObject>, f: (o: KubeObject) => void) =>
    i.addEventHandler({ onAdd: f, onUpdate: (_a, b) => f(b), onDelete: f });
  const exportsIn = (obj: KubeObject) =>
    exportInf.indexer.byIndex('namespace', obj.metadata?.namespace ?? '') as VirtualMachineExport[];
  const wake = (e: VirtualMachineExport) => loop.queue.add(objectKey(e as KubeObject));
  if (ingInf)
    on(ingInf, () => {
      for (const e of exportInf.indexer.list()) wake(e as VirtualMachineExport);
    });
  on(podInf, (p) => {
    const k = ownerKey(p, 'VirtualMachineExport');
    if (k) loop.queue.add(k);
  });
  // A VM (or its VMI, same name) exported, or whose claims are.
  const byVm = (obj: KubeObject) => {
    for (const e of exportsIn(obj))
      if (e.spec.source.kind === 'VirtualMachine' && e.spec.source.name === obj.metadata?.name) wake(e);
  };
  on(vmInf, byVm);
  on(vmiInf, byVm);
  const byClaim = (claim: string, obj: KubeObject) => {
    for (const e of exportsIn(obj)) {
      const s = e.spec.source;
      if (s.kind === 'PersistentVolumeClaim' && s.name === claim) wake(e);
      else if (s.kind === 'VirtualMachineSnapshot' && claim.startsWith(`${e.metadata?.name}-`)) wake(e);
      else if (s.kind === 'VirtualMachine') {
        const vm = vmInf.indexer.get(`${obj.metadata?.namespace}/${s.name}`) as VirtualMachine | undefined;
        if (vm && vmClaimNames(vm).some((c) => c.claim === claim)) wake(e);
      }
    }
  };
  on(claimInf, (c) => byClaim(c.metadata?.name ?? '', c));
  on(dvInf, (dv) => byClaim(dv.metadata?.name ?? '', dv));
  if (snapInf)
    on(snapInf, (s) => {
      for (const e of exportsIn(s))
        if (e.spec.source.kind === 'VirtualMachineSnapshot' && e.spec.source.name === s.metadata?.name)
          wake(e);
    });
}

/**
 * The external host from the watched Ingresses, and its certificate from the TLS Secret the
 * Ingress names (read by name when needed: an Ingress's Secret is the user's choice, so
 * virt-controller may get Secrets of the install namespace, as upstream's Role allows).
 * A missing Secret gives an empty cert, as upstream's.
 */
function externalFrom(client: ObjectClient, namespace: string, ingInf: Informer<KubeObject>) {
  return async () => {
    const found = exportProxyIngress(ingInf.indexer.list() as IngressObject[]);
    if (!found) return undefined;
    if (!found.tlsSecret) return { host: found.host, cert: '' };
    const secret = await client
      .get<KubeObject & { data?: Record<string, string> }>(SecretType, found.tlsSecret, namespace)
      .catch((err) => {
        if (err instanceof NotFoundError) return undefined;
        throw err;
      });
    const pem = Buffer.from(secret?.data?.['tls.crt'] ?? '', 'base64').toString('utf8');
    return { host: found.host, cert: certForHost(found.host, pem, new Date()) };
  };
}
