/**
 * virt-api's export.kubevirt.io webhook (upstream's vmexport admitter), called as the API
 * server calls it: a valid source admitted, a wrong group refused with upstream's field
 * path, a changed spec refused on update, another kind's review refused.
 */
import { describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import type { AdmissionRequest } from '../../../src/controllers/virt-api/admission-review';
import { type WebhookContext, Webhooks } from '../../../src/controllers/virt-api/webhooks';

const cfg = createClusterConfig({}, { hostArchitecture: 'amd64' });
const ctx: WebhookContext = { config: () => cfg, client: {} as never, privileged: () => false };
const group = 'export.kubevirt.io';
const obj = (source: object) => ({
  apiVersion: `${group}/v1`,
  kind: 'VirtualMachineExport',
  metadata: { name: 'e', namespace: 'default' },
  spec: { source },
});
function req(
  source: object,
  operation: 'CREATE' | 'UPDATE' = 'CREATE',
  old?: object,
  kind = 'VirtualMachineExport',
) {
  return {
    uid: '1',
    kind: { group, version: 'v1', kind },
    resource: { group, version: 'v1', resource: 'virtualmachineexports' },
    namespace: 'default',
    operation,
    userInfo: { username: 'alice' },
    object: obj(source),
    ...(old ? { oldObject: obj(old) } : {}),
  } as AdmissionRequest;
}
const validate = (r: AdmissionRequest) => Webhooks['/virtualmachineexports-validate'](r, ctx);
const causes = async (r: AdmissionRequest) => {
  const out = await validate(r);
  return out.allowed ? [] : out.causes.map((c) => `${c.field}: ${c.message}`);
};
const vm = { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'vm' };

describe('VirtualMachineExport admission', () => {
  it('admits a VM source and refuses a wrong group with upstream field path', async () => {
    expect(await causes(req(vm))).toEqual([]);
    expect(await causes(req({ apiGroup: 'kubevirt.io', kind: 'PersistentVolumeClaim', name: 'p' }))).toEqual([
      'spec.source.APIGroup: PVC API group must be missing or blank',
    ]);
  });

  it('keeps the spec immutable and refuses another kind', async () => {
    expect(await causes(req(vm, 'UPDATE', vm))).toEqual([]);
    expect(await causes(req({ ...vm, name: 'other' }, 'UPDATE', vm))).toEqual([
      'spec: spec in immutable after creation',
    ]);
    expect((await causes(req(vm, 'CREATE', undefined, 'VirtualMachine')))[0]).toMatch(
      /^kind: expected VirtualMachineExport/,
    );
  });
});
