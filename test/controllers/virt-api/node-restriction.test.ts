/**
 * The VMI update webhook's node restriction (issue 24, upstream's vmi-update-admitter): an
 * update from virt-handler's service account passes only when the node its token is bound
 * to (user extra authentication.kubernetes.io/node-name) is the VMI's node or its
 * migration target, and the handler may not set a migration target.
 */
import { describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import type { ObjectClient } from '../../../src/controllers/runtime/types';
import type { AdmissionRequest } from '../../../src/controllers/virt-api/admission-review';
import { NODE_NAME_EXTRA } from '../../../src/controllers/virt-api/node-restriction';
import { type WebhookContext, Webhooks } from '../../../src/controllers/virt-api/webhooks';

const HANDLER = 'system:serviceaccount:kubevirt:kubevirt-handler';

const vmi = (status: Record<string, unknown>) => ({
  apiVersion: 'kubevirt.io/v1',
  kind: 'VirtualMachineInstance',
  metadata: { name: 'vmi-a', namespace: 'default' },
  spec: {
    domain: { devices: { disks: [{ name: 'root', disk: {} }] }, resources: { requests: { memory: '64Mi' } } },
    volumes: [{ name: 'root', containerDisk: { image: 'example/tiny' } }],
  },
  status,
});

function update(
  user: string,
  node: string | undefined,
  oldStatus: Record<string, unknown>,
  newStatus: Record<string, unknown>,
): AdmissionRequest {
  return {
    uid: 'u1',
    kind: { group: 'kubevirt.io', version: 'v1', kind: 'VirtualMachineInstance' },
    resource: { group: 'kubevirt.io', version: 'v1', resource: 'virtualmachineinstances' },
    operation: 'UPDATE',
    userInfo: { username: user, ...(node ? { extra: { [NODE_NAME_EXTRA]: [node] } } : {}) },
    oldObject: vmi(oldStatus),
    object: vmi(newStatus),
  };
}

const ctx = (disabled: string[] = []): WebhookContext => ({
  config: () =>
    createClusterConfig(
      { developerConfiguration: { disabledFeatureGates: disabled } },
      { hostArchitecture: 'amd64' },
    ),
  client: {} as ObjectClient,
  privileged: (r) => r.userInfo.username === HANDLER,
  fromHandler: (r) => r.userInfo.username === HANDLER,
});

const hook = Webhooks['/virtualmachineinstances-validate-update'];

describe('node restriction of the VMI update webhook', () => {
  it("lets the handler of the VMI's node update it", async () => {
    const out = await hook(
      update(HANDLER, 'node-a', { nodeName: 'node-a' }, { nodeName: 'node-a', phase: 'Running' }),
      ctx(),
    );
    expect(out).toEqual({ allowed: true });
  });

  it('refuses the handler of another node, naming both nodes and status.nodeName', async () => {
    const out = await hook(
      update(HANDLER, 'node-b', { nodeName: 'node-a' }, { nodeName: 'node-a', phase: 'Failed' }),
      ctx(),
    );
    expect(out).toEqual({
      allowed: false,
      causes: [
        {
          reason: 'FieldValueInvalid',
          field: 'status.nodeName',
          message:
            'Node restriction, virt-handler is only allowed to modify VMIs it owns (VMI on node "node-a", handler of node "node-b")',
        },
      ],
    });
  });

  it('lets the migration target node update it', async () => {
    const during = { nodeName: 'node-a', migrationState: { targetNode: 'node-b' } };
    expect(await hook(update(HANDLER, 'node-b', during, during), ctx())).toEqual({ allowed: true });
  });

  it('refuses a handler setting a migration target', async () => {
    const out = await hook(
      update(
        HANDLER,
        'node-a',
        { nodeName: 'node-a' },
        { nodeName: 'node-a', migrationState: { targetNode: 'node-c' } },
      ),
      ctx(),
    );
    expect(out.allowed).toBe(false);
    expect(!out.allowed && out.causes[0]?.field).toBe('status.migrationState.targetNode');
  });

  it('refuses a handler credential without a node name (an unbound token)', async () => {
    const out = await hook(update(HANDLER, undefined, { nodeName: 'node-a' }, { nodeName: 'node-a' }), ctx());
    expect(out.allowed).toBe(false);
    expect(!out.allowed && out.causes[0]?.message).toBe(
      'Node restriction failed, virt-handler service account is missing node name',
    );
  });

  it('does not restrict other users, nor the handler with the NodeRestriction gate disabled', async () => {
    const other = update(
      'kubevirt-ts-admin',
      undefined,
      { nodeName: 'node-a' },
      { nodeName: 'node-a', phase: 'Failed' },
    );
    expect(await hook(other, ctx())).toEqual({ allowed: true });
    const off = update(HANDLER, 'node-b', { nodeName: 'node-a' }, { nodeName: 'node-a' });
    expect(await hook(off, ctx(['NodeRestriction']))).toEqual({ allowed: true });
  });
});
