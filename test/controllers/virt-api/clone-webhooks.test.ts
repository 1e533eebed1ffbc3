/**
 * virt-api's clone.kubevirt.io webhooks (upstream's vmclone-admitter and
 * clone-create-mutator), called as the API server calls them, with upstream's messages.
 */
import { describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import type { AdmissionRequest } from '../../../src/controllers/virt-api/admission-review';
import { type WebhookContext, Webhooks } from '../../../src/controllers/virt-api/webhooks';

const cfg = createClusterConfig({}, { hostArchitecture: 'amd64' });
const gateOff = createClusterConfig(
  { developerConfiguration: { disabledFeatureGates: ['Snapshot'] } },
  { hostArchitecture: 'amd64' },
);
const ctx = (c = cfg): WebhookContext => ({ config: () => c, client: {} as never, privileged: () => false });

function req(
  spec: Record<string, unknown>,
  operation: 'CREATE' | 'UPDATE' = 'CREATE',
  kind = 'VirtualMachineClone',
) {
  const group = 'clone.kubevirt.io';
  return {
    uid: '1',
    kind: { group, version: 'v1beta1', kind },
    resource: { group, version: 'v1beta1', resource: 'virtualmachineclones' },
    namespace: 'default',
    operation,
    userInfo: { username: 'alice' },
    object: { apiVersion: `${group}/v1beta1`, kind, metadata: { name: 'c1', namespace: 'default' }, spec },
  } as AdmissionRequest;
}
const vmSource = { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'vm1' };
const vmTarget = { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'vm2' };
const validate = (spec: Record<string, unknown>, c = cfg, op: 'CREATE' | 'UPDATE' = 'CREATE') =>
  Webhooks['/vm-clone-validate-create'](req(spec, op), ctx(c));
const causes = async (spec: Record<string, unknown>) => {
  const out = await validate(spec);
  return out.allowed ? [] : out.causes.map((c) => `${c.field}: ${c.message}`);
};

describe('VirtualMachineClone admission', () => {
  it('admits a clone of a VM or of a snapshot to a new VM, with filters, MACs and patches', async () => {
    expect(
      await causes({
        source: vmSource,
        target: vmTarget,
        labelFilters: ['*', '!kubevirt.io/*'],
        annotationFilters: ['!'.concat('a')],
        template: { labelFilters: ['app*'] },
        newMacAddresses: { default: '02:00:00:aa:bb:cc', other: '' },
        newSMBiosSerial: 'serial-2',
        patches: ['{"op":"add","path":"/metadata/labels/x","value":"y"}'],
        volumeNamePolicy: 'PrefixTargetName',
      }),
    ).toEqual([]);
    expect(
      await causes({
        source: { apiGroup: 'snapshot.kubevirt.io', kind: 'VirtualMachineSnapshot', name: 's' },
      }),
    ).toEqual([]);
  });

  it("refuses with upstream's messages and field paths", async () => {
    expect(
      await causes({ source: { ...vmSource, kind: 'Pod' }, target: { ...vmTarget, kind: 'DataVolume' } }),
    ).toEqual([
      'spec.Source.Kind: Source kind is not supported',
      'spec.Target.Kind: Target kind is not supported',
    ]);
    expect(await causes({ source: { kind: 'VirtualMachine', name: '' } })).toEqual([
      "spec.Source.APIGroup: Source's APIGroup cannot be empty",
      "spec.Source.Name: Source's name cannot be empty",
    ]);
    expect(await causes({ source: vmSource, target: { ...vmTarget, name: 'vm1' } })).toEqual([
      'spec.target.name: Target name cannot be equal to source name when both are VirtualMachines',
    ]);
    expect(await causes({ source: vmSource, labelFilters: ['!', 'a!b', 'a*b'] })).toEqual([
      'spec.labels: a negation character is not a valid filter',
      'spec.labels: spec.labels filter a!b is invalid: cannot contain a negation character (!); FilterRules: NegationChar can be only used at the beginning of the filter',
      'spec.labels: spec.labels filter a*b is invalid: cannot contain a wildcard character (*); FilterRules: WildcardChar can be only at the end of the filter',
    ]);
    expect(await causes({ source: vmSource, template: { annotationFilters: ['x*y'] } })).toHaveLength(1);
    expect(await causes({ source: vmSource, newMacAddresses: { default: '02:00:00:aa:bb' } })).toEqual([
      'spec.newMacAddresses.default: interface default has malformed MAC address (02:00:00:aa:bb).',
    ]);
    expect(await causes({ source: vmSource, patches: ['{"op": "add"', '{}'] })).toEqual([
      'spec.patches[0]: patch is not valid JSON ({"op": "add")',
    ]);
    expect(await causes({ source: vmSource, volumeNamePolicy: 'InPlace' })).toEqual([
      'spec.volumeNamePolicy: Unsupported value: "InPlace": supported values: "RandomizeNames", "PrefixTargetName"',
    ]);
  });

  it('needs the Snapshot feature gate to create, not to update', async () => {
    const out = await validate({ source: vmSource, target: vmTarget }, gateOff);
    expect(out).toMatchObject({
      allowed: false,
      causes: [{ message: 'snapshot feature gate is not enabled' }],
    });
    expect(await validate({ source: vmSource, target: vmTarget }, gateOff, 'UPDATE')).toEqual({
      allowed: true,
    });
  });

  it('refuses another kind on its path', async () => {
    const out = await Webhooks['/vm-clone-validate-create'](
      req({ source: vmSource }, 'CREATE', 'VirtualMachine'),
      ctx(),
    );
    expect(out.allowed).toBe(false);
  });

  it('the mutator names a missing target clone-<source>-<5 characters>, and leaves a named one', async () => {
    const m = Webhooks['/vm-clone-mutate-create'];
    const out = await m(req({ source: vmSource }), ctx());
    expect(out.allowed).toBe(true);
    const patch = out.allowed ? out.patch : undefined;
    expect(patch).toHaveLength(1);
    expect(patch?.[0]).toMatchObject({
      op: 'add',
      path: '/spec/target',
      value: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine' },
    });
    const nameOf = (v: unknown) => (v as { name?: string } | undefined)?.name;
    expect(nameOf(patch?.[0]?.value)).toMatch(/^clone-vm1-[bcdfghjklmnpqrstvwxz2456789]{5}$/);
    const unnamed = await m(
      req({ source: vmSource, target: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine' } }),
      ctx(),
    );
    expect(nameOf(unnamed.allowed ? unnamed.patch?.[0]?.value : undefined)).toMatch(/^clone-vm1-/);
    expect(await m(req({ source: vmSource, target: vmTarget }), ctx())).toEqual({ allowed: true });
  });
});
