/**
 * Test support: the VMs and VMIs of a folder of manifests (the project's fixtures, or
 * upstream's examples for the upstream suites), defaulted by the API layer as admission
 * would, as VMIs ready to convert.
 */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseAllDocuments } from 'yaml';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import { defaultVirtualMachineInstance } from '../../../src/api/defaults';
import type { VirtualMachine, VirtualMachineInstance } from '../../../src/api/generated/types';
import { fixturesDir } from '../../support/fixtures';

export { fixturesDir } from '../../support/fixtures';

/** The cluster configuration the tests default with: upstream's defaults on amd64. */
export const testClusterConfig = createClusterConfig({}, { hostArchitecture: 'amd64' });

/** Defaults a VMI the way admission does. */
export function admit(vmi: VirtualMachineInstance): VirtualMachineInstance {
  return defaultVirtualMachineInstance(vmi, testClusterConfig);
}

/** A VM's template as the VMI the VM controller would create. */
export function vmiFromVM(vm: VirtualMachine): VirtualMachineInstance {
  const t = vm.spec.template;
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: { ...(t.metadata ?? {}), name: vm.metadata?.name, namespace: vm.metadata?.namespace },
    spec: structuredClone(t.spec!),
  };
}

/**
 * Every VM and VMI in a folder of manifests (and the VM/VMI templates of pools and replica
 * sets), as defaulted VMIs.
 */
export function manifestVMIs(
  dir = fixturesDir,
): { file: string; kind: string; vmi: VirtualMachineInstance }[] {
  const out: { file: string; kind: string; vmi: VirtualMachineInstance }[] = [];
  for (const file of readdirSync(dir).sort()) {
    if (!file.endsWith('.yaml')) continue;
    for (const doc of parseAllDocuments(readFileSync(path.join(dir, file), 'utf8'))) {
      // biome-ignore lint/suspicious/noExplicitAny: raw manifests, narrowed by kind below
      const obj = doc.toJS() as any;
      if (!obj?.kind) continue;
      const name = obj.metadata?.name;
      switch (obj.kind) {
        case 'VirtualMachineInstance':
          out.push({ file, kind: obj.kind, vmi: admit(obj as VirtualMachineInstance) });
          break;
        case 'VirtualMachine':
          out.push({ file, kind: obj.kind, vmi: admit(vmiFromVM(obj as VirtualMachine)) });
          break;
        // Templates: the pool's VMs and the replica set's VMIs, named after their owner.
        case 'VirtualMachineInstanceReplicaSet':
          out.push({
            file,
            kind: obj.kind,
            vmi: admit({ metadata: { ...obj.spec.template.metadata, name }, spec: obj.spec.template.spec }),
          });
          break;
        case 'VirtualMachinePool':
          out.push({
            file,
            kind: obj.kind,
            vmi: admit(vmiFromVM({ metadata: { name }, spec: obj.spec.virtualMachineTemplate.spec })),
          });
          break;
      }
    }
  }
  return out;
}
