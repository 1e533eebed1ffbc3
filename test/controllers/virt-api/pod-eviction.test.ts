/**
 * virt-api's pods/eviction webhook (upstream's pod-eviction-admitter): a launcher pod's
 * eviction becomes an evacuation (status.evacuationNodeName, 429) by the VMI's
 * evictionStrategy, the cluster default when the VMI has none.
 */
import { describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import { NotFoundError } from '../../../src/controllers/runtime/errors';
import type { ObjectClient } from '../../../src/controllers/runtime/types';
import type { AdmissionRequest } from '../../../src/controllers/virt-api/admission-review';
import { admissionResponse } from '../../../src/controllers/virt-api/admission-review';
import { type WebhookContext, Webhooks } from '../../../src/controllers/virt-api/webhooks';

const hook = Webhooks['/launcher-eviction-validate'];

const launcher = (phase = 'Running', node = 'node-a') => ({
  metadata: {
    name: 'virt-launcher-vm1-abcde',
    namespace: 'ns',
    labels: { 'kubevirt.io': 'virt-launcher' },
    annotations: { 'kubevirt.io/domain': 'vm1' },
  },
  spec: { nodeName: node },
  status: { phase },
});
const vmi = (evictionStrategy?: string, migratable = true, status: Record<string, unknown> = {}) => ({
  metadata: { name: 'vm1', namespace: 'ns' },
  spec: evictionStrategy ? { evictionStrategy } : {},
  status: {
    nodeName: 'node-a',
    conditions: [{ type: 'LiveMigratable', status: migratable ? 'True' : 'False' }],
    ...status,
  },
});

function run(
  pod: unknown,
  v: unknown,
  { clusterDefault, dryRun = false }: { clusterDefault?: string; dryRun?: boolean } = {},
) {
  const patches: Array<{ patch: unknown; dryRun?: boolean }> = [];
  const client = {
    get: async (type: { kind: string }) => {
      const o = type.kind === 'Pod' ? pod : v;
      if (!o) throw new NotFoundError(404, 'NotFound', 'not found');
      return o;
    },
    patch: async (_t: unknown, _n: string, patch: unknown, o: { dryRun?: boolean }) => {
      patches.push({ patch, dryRun: o.dryRun });
      return {};
    },
  } as unknown as ObjectClient;
  const ctx: WebhookContext = {
    config: () =>
      createClusterConfig(clusterDefault ? { evictionStrategy: clusterDefault } : {}, {
        hostArchitecture: 'amd64',
      }),
    client,
    privileged: () => false,
  };
  const req: AdmissionRequest = {
    uid: 'u1',
    kind: { group: 'policy', version: 'v1', kind: 'Eviction' },
    resource: { group: '', version: 'v1', resource: 'pods' },
    subResource: 'eviction',
    name: 'virt-launcher-vm1-abcde',
    namespace: 'ns',
    operation: 'CREATE',
    userInfo: { username: 'admin' },
    dryRun,
    object: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'virt-launcher-vm1-abcde' } },
  };
  return hook(req, ctx).then((out) => ({ out, patches }));
}

const evacuation = 'Eviction triggered evacuation of VMI "ns/vm1"';

describe('the pods/eviction webhook', () => {
  it('LiveMigrate: marks the VMI for evacuation from the pod node and answers 429', async () => {
    const { out, patches } = await run(launcher(), vmi('LiveMigrate'));
    expect(out).toEqual({ allowed: false, causes: [], code: 429, message: evacuation });
    expect(patches).toEqual([
      { patch: [{ op: 'add', path: '/status/evacuationNodeName', value: 'node-a' }], dryRun: undefined },
    ]);
    const review = admissionResponse('u1', out) as { response: { status: Record<string, unknown> } };
    expect(review.response.status).toMatchObject({
      code: 429,
      reason: 'TooManyRequests',
      message: evacuation,
    });
  });

  it('LiveMigrate on a VMI that cannot migrate: refused with the reason, nothing marked', async () => {
    const { out, patches } = await run(launcher(), vmi('LiveMigrate', false));
    expect(out).toMatchObject({
      allowed: false,
      code: 429,
      message: 'VMI vm1 is configured with an eviction strategy but is not live-migratable',
    });
    expect(patches).toEqual([]);
  });

  it('LiveMigrateIfPossible evicts a VMI that cannot migrate; External always marks', async () => {
    expect((await run(launcher(), vmi('LiveMigrateIfPossible', false))).out).toEqual({ allowed: true });
    expect((await run(launcher(), vmi('External', false))).out).toMatchObject({
      code: 429,
      message: evacuation,
    });
  });

  it('None, or no strategy anywhere: the pod is evicted; the cluster default applies to a VMI without one', async () => {
    expect((await run(launcher(), vmi('None'))).out).toEqual({ allowed: true });
    expect((await run(launcher(), vmi())).out).toEqual({ allowed: true });
    expect((await run(launcher(), vmi(), { clusterDefault: 'LiveMigrate' })).out).toMatchObject({
      code: 429,
    });
  });

  it('an evacuation in progress, a target pod, a finished pod, a dry run', async () => {
    expect(
      (await run(launcher(), vmi('LiveMigrate', true, { evacuationNodeName: 'node-a' }))).out,
    ).toMatchObject({
      message: `Evacuation in progress: ${evacuation}`,
    });
    expect((await run(launcher('Running', 'node-b'), vmi('LiveMigrate'))).out).toMatchObject({
      message: 'Eviction request for target Pod',
    });
    expect((await run(launcher('Succeeded'), vmi('LiveMigrate'))).out).toEqual({ allowed: true });
    const dry = await run(launcher(), vmi('LiveMigrate'), { dryRun: true });
    expect(dry.patches[0].dryRun).toBe(true);
  });

  it('a pod it cannot read or that is no launcher passes; a missing VMI is refused', async () => {
    expect((await run(undefined, vmi('LiveMigrate'))).out).toEqual({ allowed: true });
    const other = { ...launcher(), metadata: { ...launcher().metadata, labels: {} } };
    expect((await run(other, vmi('LiveMigrate'))).out).toEqual({ allowed: true });
    expect((await run(launcher(), undefined)).out).toMatchObject({ code: 429 });
  });
});

/** An attachment pod of the launcher above (upstream's `newHotplugPod`). */
const attachment = (owners = 1) => ({
  metadata: {
    name: 'hp-volume-ab12c',
    namespace: 'ns',
    labels: { 'kubevirt.io': 'hotplug-disk' },
    ownerReferences: Array.from({ length: owners }, () => ({
      apiVersion: 'v1',
      kind: 'Pod',
      name: 'virt-launcher-vm1-abcde',
      uid: 'launcher-uid',
    })),
  },
  spec: { nodeName: 'node-a' },
  status: { phase: 'Running' },
});

/** The webhook asked about `hp-volume-ab12c`, with these pods and VMI in the store. */
async function evictAttachment(pods: Record<string, unknown>, v: unknown, failVmi?: Error) {
  const client = {
    get: async (type: { kind: string }, name: string) => {
      if (type.kind !== 'Pod' && failVmi) throw failVmi;
      const o = type.kind === 'Pod' ? pods[name] : v;
      if (!o) throw new NotFoundError(404, 'NotFound', `${name} not found`);
      return o;
    },
    patch: async () => {
      throw new Error('an attachment pod eviction patches nothing');
    },
  } as unknown as ObjectClient;
  const ctx: WebhookContext = {
    config: () => createClusterConfig({}, { hostArchitecture: 'amd64' }),
    client,
    privileged: () => false,
  };
  return hook(
    {
      uid: 'u2',
      kind: { group: 'policy', version: 'v1', kind: 'Eviction' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      subResource: 'eviction',
      name: 'hp-volume-ab12c',
      namespace: 'ns',
      operation: 'CREATE',
      userInfo: { username: 'admin' },
      object: { apiVersion: 'policy/v1', kind: 'Eviction', metadata: { name: 'hp-volume-ab12c' } },
    },
    ctx,
  );
}

describe('the pods/eviction webhook on a hotplug attachment pod (upstream admitHotplugPod)', () => {
  it('refuses while its launcher pod runs and the VMI exists, whatever the eviction strategy', async () => {
    const pods = { 'hp-volume-ab12c': attachment(), 'virt-launcher-vm1-abcde': launcher() };
    const out = await evictAttachment(pods, vmi());
    expect(out).toEqual({
      allowed: false,
      causes: [],
      code: 429,
      message: 'cannot evict hotplug pod: hp-volume-ab12c associated with running vmi: vm1 in namespace ns',
    });
    expect(await evictAttachment(pods, vmi('None'))).toEqual(out);
  });

  it('lets it go once the launcher finished or is gone, or the VMI is gone', async () => {
    const att = { 'hp-volume-ab12c': attachment() };
    expect(
      await evictAttachment({ ...att, 'virt-launcher-vm1-abcde': launcher('Succeeded') }, vmi()),
    ).toEqual({
      allowed: true,
    });
    expect(await evictAttachment(att, vmi())).toEqual({ allowed: true });
    expect(await evictAttachment({ ...att, 'virt-launcher-vm1-abcde': launcher() }, undefined)).toEqual({
      allowed: true,
    });
  });

  it('a pod with the label but not one owner, or an owner that is no launcher, is not its concern', async () => {
    expect(
      await evictAttachment(
        { 'hp-volume-ab12c': attachment(2), 'virt-launcher-vm1-abcde': launcher() },
        vmi(),
      ),
    ).toEqual({ allowed: true });
    const notLauncher = { ...launcher(), metadata: { ...launcher().metadata, labels: {} } };
    expect(
      await evictAttachment(
        { 'hp-volume-ab12c': attachment(), 'virt-launcher-vm1-abcde': notLauncher },
        vmi(),
      ),
    ).toEqual({ allowed: true });
  });

  it('a VMI it cannot read (other than not found) is refused with the error', async () => {
    const pods = { 'hp-volume-ab12c': attachment(), 'virt-launcher-vm1-abcde': launcher() };
    expect(await evictAttachment(pods, vmi(), new Error('connection refused'))).toMatchObject({
      allowed: false,
      code: 429,
      message: 'kubevirt failed getting the vmi: connection refused',
    });
  });
});
