/**
 * The migration create webhook's lookups (issue 26 step 8, upstream's
 * migration-create-admitter): a VMIM for a VMI that is not live-migratable is refused with
 * the condition's reason and message, one for a VMI with a migration in flight is refused
 * naming that migration, one for a missing or final VMI is refused; otherwise admitted.
 */
import { describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import { NotFoundError } from '../../../src/controllers/runtime/errors';
import type { ObjectClient } from '../../../src/controllers/runtime/types';
import type { AdmissionRequest } from '../../../src/controllers/virt-api/admission-review';
import { type WebhookContext, Webhooks } from '../../../src/controllers/virt-api/webhooks';

const hook = Webhooks['/migration-validate-create'];

type Obj = { metadata: { name: string; namespace: string; uid?: string }; spec?: unknown; status?: unknown };

function client(vmis: Obj[], migrations: Obj[]): ObjectClient {
  return {
    get: async (type: { kind: string }, name: string, ns?: string) => {
      const found = vmis.find((v) => v.metadata.name === name && v.metadata.namespace === ns);
      if (type.kind !== 'VirtualMachineInstance' || !found)
        throw new NotFoundError(404, 'NotFound', `${name} not found`);
      return found;
    },
    list: async (type: { kind: string }, o?: { namespace?: string }) => ({
      items:
        type.kind === 'VirtualMachineInstanceMigration'
          ? migrations.filter((m) => m.metadata.namespace === o?.namespace)
          : [],
      metadata: {},
    }),
  } as unknown as ObjectClient;
}

const ctx = (c: ObjectClient): WebhookContext => ({
  config: () => createClusterConfig({}, { hostArchitecture: 'amd64' }),
  client: c,
  privileged: () => false,
});

const vmi = (name: string, status: Record<string, unknown>): Obj => ({
  metadata: { name, namespace: 'default', uid: `uid-${name}` },
  status,
});

const running = { phase: 'Running', conditions: [{ type: 'LiveMigratable', status: 'True' }] };

function create(vmiName: string): AdmissionRequest {
  return {
    uid: 'r1',
    kind: { group: 'kubevirt.io', version: 'v1', kind: 'VirtualMachineInstanceMigration' },
    resource: { group: 'kubevirt.io', version: 'v1', resource: 'virtualmachineinstancemigrations' },
    operation: 'CREATE',
    namespace: 'default',
    userInfo: { username: 'alice' },
    object: {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachineInstanceMigration',
      metadata: { name: 'mig-new' },
      spec: { vmiName },
    },
  };
}

const refusal = (message: string) => ({
  allowed: false,
  causes: [{ reason: 'FieldValueInvalid', field: 'spec.vmiName', message }],
});

describe('migration create admission', () => {
  it('admits a migration of a running live-migratable VMI with none in flight', async () => {
    const done = {
      metadata: { name: 'old', namespace: 'default', uid: 'm0' },
      spec: { vmiName: 'a' },
      status: { phase: 'Succeeded' },
    };
    const elsewhere = {
      metadata: { name: 'o', namespace: 'other', uid: 'm9' },
      spec: { vmiName: 'a' },
      status: { phase: 'Running' },
    };
    expect(await hook(create('a'), ctx(client([vmi('a', running)], [done, elsewhere])))).toEqual({
      allowed: true,
    });
  });

  it('refuses a VMI that is not live-migratable with its reason and message', async () => {
    const bridge = vmi('b', {
      phase: 'Running',
      conditions: [
        {
          type: 'LiveMigratable',
          status: 'False',
          reason: 'InterfaceNotLiveMigratable',
          message: 'cannot migrate VMI which does not use masquerade',
        },
      ],
    });
    expect(await hook(create('b'), ctx(client([bridge], [])))).toEqual(
      refusal(
        'Cannot migrate VMI, Reason: InterfaceNotLiveMigratable, Message: cannot migrate VMI which does not use masquerade',
      ),
    );
  });

  it('refuses a second migration while one is in flight, naming it', async () => {
    const inFlight = {
      metadata: { name: 'first', namespace: 'default', uid: 'm1' },
      spec: { vmiName: 'a' },
      status: { phase: 'Scheduling' },
    };
    expect(await hook(create('a'), ctx(client([vmi('a', running)], [inFlight])))).toEqual(
      refusal(
        'in-flight migration detected. Active migration job (m1) is currently already in progress for VMI a.',
      ),
    );
  });

  it('refuses a missing or final VMI', async () => {
    expect(await hook(create('ghost'), ctx(client([], [])))).toEqual(
      refusal('the VMI "default/ghost" does not exist'),
    );
    expect(await hook(create('f'), ctx(client([vmi('f', { phase: 'Failed' })], [])))).toEqual(
      refusal('Cannot migrate VMI in finalized state.'),
    );
  });
});
