/**
 * virt-api's snapshot.kubevirt.io webhooks and the VM update rules under a snapshot or
 * restore, called as the API server calls them (AdmissionRequests), on an embedded store.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import { EmbeddedStore } from '../../../src/controllers/runtime/embedded/store';
import { snapshotTypes, VirtualMachineRestoreType } from '../../../src/controllers/runtime/storage-resources';
import type { AdmissionRequest } from '../../../src/controllers/virt-api/admission-review';
import { type WebhookContext, Webhooks } from '../../../src/controllers/virt-api/webhooks';

const cfg = createClusterConfig({}, { hostArchitecture: 'amd64' });
const gateOff = createClusterConfig(
  { developerConfiguration: { disabledFeatureGates: ['Snapshot'] } },
  { hostArchitecture: 'amd64' },
);

function req(
  kind: string,
  plural: string,
  operation: 'CREATE' | 'UPDATE',
  object: Record<string, unknown>,
  oldObject?: Record<string, unknown>,
  group = 'snapshot.kubevirt.io',
): AdmissionRequest {
  const version = group === 'kubevirt.io' ? 'v1' : 'v1beta1';
  return {
    uid: '1',
    kind: { group, version, kind },
    resource: { group, version, resource: plural },
    namespace: 'default',
    operation,
    userInfo: { username: 'alice' },
    object: { apiVersion: `${group}/${version}`, kind, ...object },
    ...(oldObject ? { oldObject: { apiVersion: `${group}/${version}`, kind, ...oldObject } } : {}),
  };
}

const snap = (source: Record<string, unknown>) => ({
  metadata: { name: 's', namespace: 'default' },
  spec: { source },
});
const restore = (name: string, spec: Record<string, unknown>) => ({
  metadata: { name, namespace: 'default' },
  spec: {
    target: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'vm1' },
    virtualMachineSnapshotName: 's',
    ...spec,
  },
});

describe('snapshot.kubevirt.io admission', () => {
  let store: EmbeddedStore;
  let ctx: WebhookContext;
  beforeEach(async () => {
    store = await EmbeddedStore.open({ types: [...snapshotTypes] });
    ctx = { config: () => cfg, client: store, privileged: () => false };
  });
  afterEach(async () => {
    await store.close();
  });
  const snapHook = Webhooks['/virtualmachinesnapshots-validate']!;
  const restoreHook = Webhooks['/virtualmachinerestores-validate']!;
  const vmHook = Webhooks['/virtualmachines-validate']!;

  it('VirtualMachineSnapshot: source must be a kubevirt.io VirtualMachine; the gate; spec immutable', async () => {
    const vm = { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'vm1' };
    expect(
      await snapHook(req('VirtualMachineSnapshot', 'virtualmachinesnapshots', 'CREATE', snap(vm)), ctx),
    ).toEqual({ allowed: true });
    expect(
      await snapHook(
        req(
          'VirtualMachineSnapshot',
          'virtualmachinesnapshots',
          'CREATE',
          snap({ kind: 'VirtualMachine', name: 'vm1' }),
        ),
        ctx,
      ),
    ).toEqual({
      allowed: false,
      causes: [{ reason: 'FieldValueRequired', message: 'missing apiGroup', field: 'spec.source.apiGroup' }],
    });
    expect(
      await snapHook(
        req('VirtualMachineSnapshot', 'virtualmachinesnapshots', 'CREATE', snap({ ...vm, apiGroup: 'apps' })),
        ctx,
      ),
    ).toMatchObject({
      causes: [{ message: 'invalid apiGroup', field: 'spec.source.apiGroup' }],
    });
    expect(
      await snapHook(
        req(
          'VirtualMachineSnapshot',
          'virtualmachinesnapshots',
          'CREATE',
          snap({ ...vm, kind: 'VirtualMachineInstance' }),
        ),
        ctx,
      ),
    ).toMatchObject({
      causes: [{ message: 'invalid kind', field: 'spec.source.kind' }],
    });
    expect(
      await snapHook(req('VirtualMachineSnapshot', 'virtualmachinesnapshots', 'CREATE', snap(vm)), {
        ...ctx,
        config: () => gateOff,
      }),
    ).toMatchObject({ causes: [{ message: 'snapshot feature gate not enabled' }] });
    expect(
      await snapHook(
        req(
          'VirtualMachineSnapshot',
          'virtualmachinesnapshots',
          'UPDATE',
          snap({ ...vm, name: 'vm2' }),
          snap(vm),
        ),
        ctx,
      ),
    ).toMatchObject({ causes: [{ message: 'spec in immutable after creation', field: 'spec' }] });
  });

  it('VirtualMachineRestore: policies, overrides, patches, one restore in progress per target', async () => {
    const ok = await restoreHook(
      req(
        'VirtualMachineRestore',
        'virtualmachinerestores',
        'CREATE',
        restore('r1', { volumeRestorePolicy: 'InPlace' }),
      ),
      ctx,
    );
    expect(ok).toEqual({ allowed: true });
    const bad = await restoreHook(
      req(
        'VirtualMachineRestore',
        'virtualmachinerestores',
        'CREATE',
        restore('r1', {
          volumeRestorePolicy: 'Shuffle',
          volumeOwnershipPolicy: 'Nobody',
          targetReadinessPolicy: 'Whenever',
          volumeRestoreOverrides: [{ restoreName: 'x' }, { volumeName: 'data' }],
          patches: ['{"op": "replace", "path": "/metadata/name", "value": "x"}'],
        }),
      ),
      ctx,
    );
    expect(bad.allowed).toBe(false);
    expect(
      (bad as { causes: Array<{ message: string; field: string }> }).causes.map(
        (c) => `${c.field}: ${c.message}`,
      ),
    ).toEqual([
      'spec.patches: patching is valid only for elements under /spec/ only:  "path": "/metadata/name"',
      'spec.volumeRestoreOverrides[0].volumeName: must provide a volume name',
      'spec.volumeRestoreOverrides[1]: must provide at least one overriden field',
      'spec.volumeRestorePolicy: volume restore policy "Shuffle" doesn\'t exist',
      'spec.volumeOwnershipPolicy: volume ownership policy "Nobody" doesn\'t exist',
      'spec.targetReadinessPolicy: target readiness policy "Whenever" doesn\'t exist',
    ]);
    // A clone's patches: a value holding ':' (a MAC) is a valid patch, not upstream's split
    // error; a path outside /spec/ is still refused when the text only parses as JSON.
    const macs = (path: string) =>
      restoreHook(
        req(
          'VirtualMachineRestore',
          'virtualmachinerestores',
          'CREATE',
          restore('r1', { patches: [JSON.stringify({ op: 'add', path, value: '02:00:00:c1:0e:01' })] }),
        ),
        ctx,
      );
    expect(await macs('/spec/template/spec/domain/devices/interfaces/0/macAddress')).toEqual({
      allowed: true,
    });
    expect(await macs('/status/x')).toMatchObject({
      allowed: false,
      causes: [{ message: 'patching is valid only for elements under /spec/ only: "path": "/status/x"' }],
    });
    await store.create(VirtualMachineRestoreType, {
      apiVersion: 'snapshot.kubevirt.io/v1beta1',
      kind: 'VirtualMachineRestore',
      ...restore('r0', {}),
    } as never);
    expect(
      await restoreHook(
        req('VirtualMachineRestore', 'virtualmachinerestores', 'CREATE', restore('r1', {})),
        ctx,
      ),
    ).toMatchObject({
      causes: [{ message: 'VirtualMachineRestore "r0" in progress', field: 'spec.target' }],
    });
  });

  it('a VM under a snapshot may not change its running state or volumes; under a restore its runStrategy', async () => {
    const base = {
      metadata: { name: 'vm1', namespace: 'default' },
      spec: {
        runStrategy: 'Halted',
        template: {
          spec: { domain: { devices: {}, resources: { requests: { memory: '64Mi' } } }, volumes: [] },
        },
      },
    };
    const locked = { ...base, status: { snapshotInProgress: 's1' } };
    const start = { ...locked, spec: { ...base.spec, runStrategy: 'Always' } };
    expect(
      await vmHook(req('VirtualMachine', 'virtualmachines', 'UPDATE', start, locked, 'kubevirt.io'), ctx),
    ).toMatchObject({
      allowed: false,
      causes: [{ message: 'Cannot update vm running state until snapshot "s1" completes', field: 'spec' }],
    });
    const vols = structuredClone(locked);
    (vols.spec.template.spec as { volumes: unknown[] }).volumes = [
      { name: 'd', persistentVolumeClaim: { claimName: 'c' } },
    ];
    expect(
      await vmHook(req('VirtualMachine', 'virtualmachines', 'UPDATE', vols, locked, 'kubevirt.io'), ctx),
    ).toMatchObject({
      causes: [{ message: 'Cannot update vm disks or volumes until snapshot "s1" completes' }],
    });
    const restoring = { ...base, status: { restoreInProgress: 'r1' } };
    expect(
      await vmHook(
        req(
          'VirtualMachine',
          'virtualmachines',
          'UPDATE',
          { ...restoring, spec: { ...base.spec, runStrategy: 'Always' } },
          restoring,
          'kubevirt.io',
        ),
        ctx,
      ),
    ).toMatchObject({ causes: [{ message: 'Cannot update VM runStrategy until restore "r1" completes' }] });
    // Unlocked: the same change is allowed.
    expect(
      await vmHook(
        req(
          'VirtualMachine',
          'virtualmachines',
          'UPDATE',
          { ...base, spec: { ...base.spec, runStrategy: 'Always' } },
          base,
          'kubevirt.io',
        ),
        ctx,
      ),
    ).toEqual({ allowed: true });
  });
});

describe('virt-api unpause under a VM snapshot', () => {
  it('refuses with 409 "VM snapshot is in progress" and forwards nothing; allowed once unlocked', async () => {
    const { vmiOperation } = await import('../../../src/controllers/virt-api/vmi-subresources');
    const forwarded: unknown[] = [];
    const handlers = { call: async (...a: unknown[]) => forwarded.push(a) } as never;
    let snapshotInProgress: string | undefined = 's1';
    const client = {
      get: async (type: { kind: string }) =>
        type.kind === 'VirtualMachine'
          ? { metadata: { name: 'v', namespace: 'ns' }, status: { snapshotInProgress } }
          : {
              metadata: { name: 'v', namespace: 'ns' },
              status: { phase: 'Running', nodeName: 'n1', conditions: [{ type: 'Paused', status: 'True' }] },
            },
    } as never;
    const e = (await vmiOperation(client, handlers, 'PUT', 'ns', 'v', 'unpause', {}).catch(
      (x: unknown) => x,
    )) as {
      code: number;
      message: string;
    };
    expect(e.code).toBe(409);
    expect(e.message).toContain('VM snapshot is in progress');
    expect(forwarded).toHaveLength(0);
    snapshotInProgress = undefined;
    await vmiOperation(client, handlers, 'PUT', 'ns', 'v', 'unpause', {});
    expect(forwarded).toHaveLength(1);
  });
});
