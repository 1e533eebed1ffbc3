/**
 * The VirtualMachine a pool makes at an index (upstream indexVMSpec and
 * injectPoolRevisionLabelsIntoVM in pkg/virt-controller/watch/pool): `<pool>-<index>`, the
 * template's labels, annotations and spec, each DataVolume template (and the volumes using
 * it) suffixed with the index so VMs do not share disks, ConfigMap/Secret references
 * suffixed when `nameGeneration` asks, and the pool revision label on the VM and its VMI
 * template so a VMI tells which revision it was started from.
 */
import type { VirtualMachine, VirtualMachinePool, VirtualMachineSpec } from '../../../api/generated/types';
import { controllerRef } from '../../common/owner-ref';

/** Label naming the pool ControllerRevision a VM (and the VMI started from it) follows. */
export const POOL_REVISION_LABEL = 'kubevirt.io/vm-pool-revision-name';

/** The index of a pool VM named `<pool>-<n>`, or -1. */
export function vmIndex(pool: string, vm: VirtualMachine): number {
  const name = vm.metadata?.name ?? '';
  const m = name.startsWith(`${pool}-`) ? /^(\d+)$/.exec(name.slice(pool.length + 1)) : null;
  return m ? Number(m[1]) : -1;
}

/** The pool template's VM spec for index `idx` (upstream indexVMSpec). */
export function indexVmSpec(pool: VirtualMachinePool, idx: number): VirtualMachineSpec {
  const spec = structuredClone(
    pool.spec.virtualMachineTemplate.spec ?? ({ template: {} } as VirtualMachineSpec),
  );
  const suffix = `-${idx}`;
  const dvNames = new Map<string, string>();
  for (const dvt of spec.dataVolumeTemplates ?? []) {
    const name = dvt.metadata?.name;
    if (!name) continue;
    dvNames.set(name, name + suffix);
    dvt.metadata = { ...dvt.metadata, name: name + suffix };
  }
  const cms = pool.spec.nameGeneration?.appendIndexToConfigMapRefs === true;
  const secrets = pool.spec.nameGeneration?.appendIndexToSecretRefs === true;
  for (const v of spec.template.spec?.volumes ?? []) {
    if (v.persistentVolumeClaim) {
      const n = dvNames.get(v.persistentVolumeClaim.claimName);
      if (n) v.persistentVolumeClaim.claimName = n;
    } else if (v.dataVolume) {
      const n = dvNames.get(v.dataVolume.name);
      if (n) v.dataVolume.name = n;
    } else if (v.configMap && cms) {
      v.configMap.name = `${v.configMap.name ?? ''}${suffix}`;
    } else if (v.secret && secrets) {
      v.secret.secretName = `${v.secret.secretName ?? ''}${suffix}`;
    } else if (secrets) {
      // `secretRef` is upstream's UserDataSecretRef.
      const ci = v.cloudInitNoCloud ?? v.cloudInitConfigDrive;
      if (ci?.secretRef) ci.secretRef.name = `${ci.secretRef.name ?? ''}${suffix}`;
      if (ci?.networkDataSecretRef)
        ci.networkDataSecretRef.name = `${ci.networkDataSecretRef.name ?? ''}${suffix}`;
    }
  }
  return spec;
}

/** The VM at `index`, at pool revision `revision`, owned by the pool. */
export function buildPoolVm(pool: VirtualMachinePool, index: number, revision: string): VirtualMachine {
  const t = pool.spec.virtualMachineTemplate;
  const spec = indexVmSpec(pool, index);
  spec.template.metadata = {
    ...spec.template.metadata,
    labels: { ...(spec.template.metadata?.labels ?? {}), [POOL_REVISION_LABEL]: revision },
  };
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    metadata: {
      name: `${pool.metadata?.name}-${index}`,
      namespace: pool.metadata?.namespace,
      labels: { ...(t.metadata?.labels ?? {}), [POOL_REVISION_LABEL]: revision },
      annotations: { ...(t.metadata?.annotations ?? {}) },
      ownerReferences: [controllerRef('pool.kubevirt.io/v1beta1', 'VirtualMachinePool', pool)],
    },
    spec,
  };
}

/**
 * `vm` moved to the pool's revision (upstream opportunisticUpdate): template labels,
 * annotations and spec replaced, keeping the firmware UUID and serial the VM was given,
 * since they identify the machine to its guest (upstream preserveVMIdentityFields).
 */
export function updatedPoolVm(
  pool: VirtualMachinePool,
  vm: VirtualMachine,
  index: number,
  revision: string,
): VirtualMachine {
  const wanted = buildPoolVm(pool, index, revision);
  const old = vm.spec.template?.spec?.domain?.firmware;
  const fw = wanted.spec.template.spec?.domain?.firmware;
  if (old && wanted.spec.template.spec?.domain) {
    const next = { ...(fw ?? {}) };
    if (old.uuid) next.uuid = old.uuid;
    if (old.serial) next.serial = old.serial;
    wanted.spec.template.spec.domain.firmware = next;
  }
  return {
    ...vm,
    metadata: { ...vm.metadata, labels: wanted.metadata?.labels, annotations: wanted.metadata?.annotations },
    spec: wanted.spec,
  };
}
