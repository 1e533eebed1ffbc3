/**
 * virt-api's VM spec subresources as upstream's virtctl reads them, on the embedded store
 * over real HTTPS: expand-vm-spec (`virtctl expand --file`) and objectgraph (upstream
 * v1.9, feature gate ObjectGraph).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualMachineInstanceSpec } from '../../../src/api/generated/types';
import { InstancetypeResources, PodType } from '../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../src/controllers/runtime/types';
import { startVirtApiHarness, type VirtApiHarness, VirtualMachineType } from './virt-api-harness';
import { vmObjects } from './vm-objects';

const NS = 'ns1';
const base = `/apis/subresources.kubevirt.io/v1/namespaces/${NS}`;
let h: VirtApiHarness;
const { template, vm, vmi } = vmObjects(() => h, NS);

beforeAll(async () => {
  h = await startVirtApiHarness();
});

afterAll(async () => {
  await h?.close();
});

describe('expand-vm-spec (virtctl expand --file)', () => {
  it('adds the default disks and interface upstream adds, with the preference applied to them', async () => {
    await h.store.create(
      InstancetypeResources.VirtualMachineClusterPreference as never,
      {
        apiVersion: 'instancetype.kubevirt.io/v1beta1',
        kind: 'VirtualMachineClusterPreference',
        metadata: { name: 'virtio' },
        spec: { devices: { preferredDiskBus: 'virtio', preferredInterfaceModel: 'virtio' } },
      } as KubeObject,
    );
    const { code, body } = await h.call('PUT', `${base}/expand-vm-spec`, {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachine',
      metadata: { name: 'to-expand' },
      spec: {
        preference: { name: 'virtio' },
        template: {
          spec: {
            domain: { devices: {}, resources: { requests: { memory: '64Mi' } } },
            volumes: [{ name: 'root', containerDisk: { image: 'example/tiny:1' } }],
          },
        },
      },
    });
    expect(code, JSON.stringify(body)).toBe(200);
    const spec = (body as unknown as { spec: { template: { spec: VirtualMachineInstanceSpec } } }).spec
      .template.spec;
    expect(spec.domain.devices.disks).toEqual([{ name: 'root', disk: { bus: 'virtio' } }]);
    expect(spec.domain.devices.interfaces).toEqual([{ name: 'default', bridge: {}, model: 'virtio' }]);
    expect(spec.networks).toEqual([{ name: 'default', pod: {} }]);
    expect(spec.domain.machine).toEqual({ type: 'q35' });
  });
});

describe('objectgraph (upstream v1.9, feature gate ObjectGraph)', () => {
  const ref = (kind: string, apiGroup: string, name: string, namespace = NS) => ({
    objectReference: { name, namespace, apiGroup, kind },
  });
  const dep = (t: string) => ({ labels: { 'kubevirt.io/dependency-type': t } });

  beforeAll(async () => {
    await vm('vm-graph', 'Always', { created: true });
    await h.store.patch(
      VirtualMachineType,
      'vm-graph',
      {
        spec: {
          preference: { kind: 'VirtualMachineClusterPreference', name: 'virtio' },
          template: {
            spec: {
              ...template.spec,
              accessCredentials: [
                {
                  sshPublicKey: {
                    source: { secret: { secretName: 'keys' } },
                    propagationMethod: { noCloud: {} },
                  },
                },
              ],
              networks: [
                { name: 'default', pod: {} },
                { name: 'blue', multus: { networkName: 'other/blue-net' } },
              ],
              volumes: [
                { name: 'root', persistentVolumeClaim: { claimName: 'root-pvc' } },
                { name: 'ci', cloudInitNoCloud: { secretRef: { name: 'ci-secret' } } },
                { name: 'dv', dataVolume: { name: 'dv1' } },
              ],
            },
          },
        },
      },
      { namespace: NS, type: 'merge' },
    );
    await vmi('vm-graph', { phase: 'Running' });
    await h.store.create(PodType, {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: 'virt-launcher-vm-graph-abcde',
        namespace: NS,
        labels: { 'kubevirt.io': 'virt-launcher' },
        annotations: { 'kubevirt.io/domain': 'vm-graph' },
      },
      spec: { containers: [{ name: 'compute', image: 'x' }] },
    } as KubeObject);
  });

  it('is refused while the gate is off, as upstream', async () => {
    expect(await h.call('GET', `${base}/virtualmachines/vm-graph/objectgraph`)).toMatchObject({
      code: 400,
      body: { message: 'ObjectGraph feature gate not enabled: Unable to return object graph.' },
    });
  });

  it("a VM's graph: its VMI and launcher pod, preference, credentials, volumes and Multus network", async () => {
    h.gates.push('ObjectGraph');
    const { code, body } = await h.call('GET', `${base}/virtualmachines/vm-graph/objectgraph`);
    expect(code, JSON.stringify(body)).toBe(200);
    expect(body).toEqual({
      ...ref('VirtualMachine', 'kubevirt.io', 'vm-graph'),
      ...dep('compute'),
      children: [
        {
          ...ref('VirtualMachineInstance', 'kubevirt.io', 'vm-graph'),
          ...dep('compute'),
          children: [{ ...ref('Pod', '', 'virt-launcher-vm-graph-abcde'), ...dep('compute') }],
        },
        {
          ...ref('VirtualMachineClusterPreference', 'instancetype.kubevirt.io', 'virtio', ''),
          ...dep('config'),
          optional: true,
        },
        { ...ref('Secret', '', 'keys'), ...dep('config') },
        { ...ref('PersistentVolumeClaim', '', 'root-pvc'), ...dep('storage') },
        { ...ref('Secret', '', 'ci-secret'), ...dep('config') },
        {
          ...ref('DataVolume', 'cdi.kubevirt.io', 'dv1'),
          ...dep('storage'),
          children: [{ ...ref('PersistentVolumeClaim', '', 'dv1'), ...dep('storage') }],
        },
        {
          ...ref('NetworkAttachmentDefinition', 'k8s.cni.cncf.io', 'blue-net', 'other'),
          ...dep('network'),
          optional: true,
        },
      ],
    });
  });

  it('options: without optional nodes, and only storage', async () => {
    const { body } = await h.call('GET', `${base}/virtualmachines/vm-graph/objectgraph`, {
      includeOptionalNodes: false,
      labelSelector: { matchLabels: { 'kubevirt.io/dependency-type': 'storage' } },
    });
    const names = (body.children as Array<{ objectReference: { name: string } }>).map(
      (c) => c.objectReference.name,
    );
    expect(names).toEqual(['root-pvc', 'dv1']);
    expect(
      await h.call('GET', `${base}/virtualmachines/vm-graph/objectgraph`, {
        labelSelector: { matchExpressions: [{ key: 'a', operator: 'Near' }] },
      }),
    ).toMatchObject({
      code: 400,
      body: { message: expect.stringContaining('matchExpressions[0].operator') },
    });
  });

  it("a VMI's graph starts at its launcher pod", async () => {
    const { body } = await h.call('GET', `${base}/virtualmachineinstances/vm-graph/objectgraph`);
    expect(body.objectReference).toEqual({
      name: 'vm-graph',
      namespace: NS,
      apiGroup: 'kubevirt.io',
      kind: 'VirtualMachineInstance',
    });
    expect((body.children as unknown[])[0]).toEqual({
      ...ref('Pod', '', 'virt-launcher-vm-graph-abcde'),
      ...dep('compute'),
    });
  });
});
