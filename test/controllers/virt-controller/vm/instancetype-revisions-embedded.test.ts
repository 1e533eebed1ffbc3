/**
 * Instance type revisions on the embedded store (local mode's API) with the
 * virt-controller and the node simulator: the issue 28 scenario (instancetype-revisions-case),
 * a stored revision with other data refused as upstream, and the revisions garbage
 * collected with their VM.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { VirtualMachine } from '../../../../src/api/generated/types';
import { buildRevision } from '../../../../src/api/instancetype/revision';
import {
  ControllerRevisionType,
  VirtualMachineClusterInstancetypeType,
  VirtualMachineType,
} from '../../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../../src/controllers/runtime/types';
import { type Harness, startHarness, waitFor } from '../services/embedded-harness';
import { instancetypeRevisionScenario } from './instancetype-revisions-case';

describe('instance type revisions (embedded store)', () => {
  let h: Harness;
  beforeEach(async () => {
    h = await startHarness({ instancetypes: true });
  });
  afterEach(async () => {
    await h.stop();
  });

  it('an edited instance type leaves the next start unchanged; clearing the reference picks up the edit', async () => {
    await instancetypeRevisionScenario(h.store, 'default', 'rev');
    expect(h.errors).toEqual([]);
  });

  it('refuses a stored revision of the same name holding other data, and the revisions go with the VM', async () => {
    const it = await h.store.create<KubeObject>(VirtualMachineClusterInstancetypeType, {
      apiVersion: 'instancetype.kubevirt.io/v1beta1',
      kind: 'VirtualMachineClusterInstancetype',
      metadata: { name: 'c1' },
      spec: { cpu: { guest: 1 }, memory: { guest: '128Mi' } },
    } as KubeObject);
    // What a revision of this object for VM "bad" is named, holding a different memory size.
    const forged = buildRevision('bad', 'default', {
      ...(it as KubeObject & { spec: unknown }),
      kind: 'VirtualMachineClusterInstancetype',
      spec: { cpu: { guest: 1 }, memory: { guest: '256Mi' } },
    });
    await h.store.create(ControllerRevisionType, forged as KubeObject);
    const vm = (name: string): VirtualMachine => ({
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachine',
      metadata: { name, namespace: 'default' },
      spec: {
        runStrategy: 'Halted',
        instancetype: { name: 'c1' },
        template: { spec: { domain: { devices: {} } } },
      },
    });
    await h.store.create(VirtualMachineType, vm('bad') as KubeObject);
    const failure = await waitFor('Failure condition', async () => {
      const x = await h.store.get<VirtualMachine & KubeObject>(VirtualMachineType, 'bad', 'default');
      return x.status?.conditions?.find((c) => c.type === 'Failure' && c.status === 'True');
    });
    expect(failure.message).toContain(
      `found existing ControllerRevision with unexpected data: ${forged.metadata?.name}`,
    );
    expect(
      (await h.store.get<VirtualMachine & KubeObject>(VirtualMachineType, 'bad', 'default')).status
        ?.instancetypeRef,
    ).toBeUndefined();

    await h.store.create(VirtualMachineType, vm('good') as KubeObject);
    const good = await waitFor('revision referenced', async () => {
      const x = await h.store.get<VirtualMachine & KubeObject>(VirtualMachineType, 'good', 'default');
      return x.status?.instancetypeRef?.controllerRevisionRef?.name ? x : undefined;
    });
    const revName = good.status?.instancetypeRef?.controllerRevisionRef?.name ?? '';
    await h.store.get(ControllerRevisionType, revName, 'default');
    await h.store.delete(VirtualMachineType, 'good', { namespace: 'default' });
    await waitFor(
      'revision collected',
      async () => !(await h.store.get(ControllerRevisionType, revName, 'default').catch(() => undefined)),
    );
  });
});
