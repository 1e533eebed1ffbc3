/**
 * VirtualMachines and VirtualMachineInstances for virt-api answer tests: a VM with a run
 * strategy and status, and its VMI (owned by the VM of that name, if one was made first).
 */
import type { KubeObject } from '../../../src/controllers/runtime/types';
import { type VirtApiHarness, VirtualMachineInstanceType, VirtualMachineType } from './virt-api-harness';

/** Object makers writing through the harness `h()` (started later) into `namespace`. */
export function vmObjects(h: () => VirtApiHarness, namespace: string) {
  const NS = namespace;
  const template = { spec: { domain: { devices: {}, resources: { requests: { memory: '64Mi' } } } } };
  const uids: Record<string, string> = {};

  async function vm(name: string, runStrategy: string, status: Record<string, unknown> = {}) {
    const created = await h().put(VirtualMachineType, {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachine',
      metadata: { name, namespace: NS },
      spec: { runStrategy, template },
      status,
    } as KubeObject);
    uids[name] = created.metadata?.uid ?? '';
  }

  async function vmi(name: string, status: Record<string, unknown>, grace = 180, finalizers?: string[]) {
    await h().put(VirtualMachineInstanceType, {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachineInstance',
      metadata: {
        name,
        namespace: NS,
        ...(finalizers ? { finalizers } : {}),
        ...(uids[name]
          ? {
              ownerReferences: [
                {
                  apiVersion: 'kubevirt.io/v1',
                  kind: 'VirtualMachine',
                  name,
                  uid: uids[name],
                  controller: true,
                },
              ],
            }
          : {}),
      },
      spec: { ...template.spec, terminationGracePeriodSeconds: grace },
      status,
    } as KubeObject);
  }

  return { template, vm, vmi };
}
