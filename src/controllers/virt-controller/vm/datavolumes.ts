/**
 * A VM's DataVolumes (upstream pkg/virt-controller/watch/vm handleDataVolumes and
 * pkg/storage/types/dv.go): each `spec.dataVolumeTemplates` entry becomes a DataVolume
 * owned by the VM (label kubevirt.io/created-by its uid, the template's priority class
 * default); the VM starts only once they are populated (Succeeded, or
 * WaitForFirstConsumer / PendingPopulation); printableStatus shows Provisioning while a
 * referenced DataVolume is being filled and DataVolumeError when one failed.
 */
import type { DataVolume } from '../../../api/generated/cdi/types';
import type { VirtualMachine } from '../../../api/generated/types';
import type { ControllerDeps, Lister } from '../../common/controller-ports';
import { controllerRef } from '../../common/owner-ref';
import { AlreadyExistsError, ConflictError } from '../../runtime/errors';
import { DataVolumeType } from '../../runtime/resources';
import type { KubeObject } from '../../runtime/types';

/** Upstream's event reasons. */
export const DataVolumeEventReason = {
  SuccessfulDataVolumeCreate: 'SuccessfulDataVolumeCreate',
  FailedDataVolumeCreate: 'FailedDataVolumeCreate',
  FailedDataVolumeImport: 'FailedDataVolumeImport',
} as const;

const POPULATED = new Set(['Succeeded', 'WaitForFirstConsumer', 'PendingPopulation']);

/** The DataVolume a template makes (upstream CreateDataVolumeManifest). */
export function dataVolumeFromTemplate(vm: VirtualMachine, index: number): DataVolume {
  const t = vm.spec.dataVolumeTemplates![index];
  const spec = structuredClone(t.spec) as DataVolume['spec'];
  const pc = vm.spec.template.spec?.priorityClassName;
  if (!spec.priorityClassName && pc) spec.priorityClassName = pc;
  return {
    apiVersion: 'cdi.kubevirt.io/v1beta1',
    kind: 'DataVolume',
    metadata: {
      name: t.metadata?.name,
      namespace: vm.metadata?.namespace,
      labels: { ...(t.metadata?.labels ?? {}), 'kubevirt.io/created-by': vm.metadata?.uid ?? '' },
      ...(t.metadata?.annotations ? { annotations: { ...t.metadata.annotations } } : {}),
      ownerReferences: [controllerRef('kubevirt.io/v1', 'VirtualMachine', vm)],
    },
    spec,
  };
}

/**
 * Creates the VM's missing DataVolumes; true when all of them are populated. A DataVolume
 * that failed gets upstream's FailedDataVolumeImport event on the VM.
 */
export async function handleDataVolumes(
  d: ControllerDeps & { dataVolumes: Lister<DataVolume> },
  vm: VirtualMachine,
): Promise<boolean> {
  let ready = true;
  const ns = vm.metadata?.namespace;
  for (const [i, t] of (vm.spec.dataVolumeTemplates ?? []).entries()) {
    const name = t.metadata?.name ?? '';
    const cur = d.dataVolumes.get(`${ns}/${name}`);
    if (!cur) {
      ready = false;
      try {
        await d.client.create(DataVolumeType, dataVolumeFromTemplate(vm, i) as KubeObject);
      } catch (err) {
        if (err instanceof AlreadyExistsError || err instanceof ConflictError) continue; // the cache lags
        d.recorder.event(
          vm,
          'Warning',
          DataVolumeEventReason.FailedDataVolumeCreate,
          `Error creating DataVolume ${name}: ${(err as Error).message}`,
        );
        throw new Error(`failed to create DataVolume: ${(err as Error).message}`);
      }
      d.recorder.event(
        vm,
        'Normal',
        DataVolumeEventReason.SuccessfulDataVolumeCreate,
        `Created DataVolume ${name}`,
      );
      continue;
    }
    if (POPULATED.has(cur.status?.phase ?? '')) continue;
    if (cur.status?.phase === 'Failed')
      d.recorder.event(
        vm,
        'Warning',
        DataVolumeEventReason.FailedDataVolumeImport,
        `DataVolume ${name} failed to import disk image`,
      );
    ready = false;
  }
  return ready;
}

const cond = (dv: DataVolume, type: string) => dv.status?.conditions?.find((c) => c.type === type);

function referenced(vm: VirtualMachine, dataVolumes: Lister<DataVolume>): DataVolume[] {
  const ns = vm.metadata?.namespace;
  return (vm.spec.template.spec?.volumes ?? [])
    .map((v) => v.dataVolume && dataVolumes.get(`${ns}/${v.dataVolume.name}`))
    .filter((dv): dv is DataVolume => !!dv);
}

/** upstream HasDataVolumeProvisioning: a referenced DataVolume is being filled. */
export function hasDataVolumeProvisioning(vm: VirtualMachine, dataVolumes: Lister<DataVolume>): boolean {
  return referenced(vm, dataVolumes).some((dv) => {
    const phase = dv.status?.phase;
    if (phase === 'Succeeded' || phase === 'PendingPopulation') return false;
    const bound = cond(dv, 'Bound')?.status === 'True';
    return bound || phase !== 'WaitForFirstConsumer';
  });
}

/** upstream HasDataVolumeErrors: a referenced DataVolume failed or its importer stopped on an error. */
export function hasDataVolumeErrors(vm: VirtualMachine, dataVolumes: Lister<DataVolume>): boolean {
  return referenced(vm, dataVolumes).some((dv) => {
    if (dv.status?.phase === 'Failed') return true;
    const running = cond(dv, 'Running');
    return (
      running?.status === 'False' && (running.reason === 'Error' || running.reason === 'ImagePullFailed')
    );
  });
}
