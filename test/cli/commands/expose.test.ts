/** virtctl expose: the Service upstream creates, checked on the embedded store. */
import { describe, expect, it } from 'vitest';
import { exposeObject, exposeSelector, exposeService } from '../../../src/cli/commands/virtctl/expose';
import type { Target } from '../../../src/cli/commands/virtctl/target';
import { EmbeddedStore } from '../../../src/controllers/runtime/embedded/store';
import { ServiceType, VirtualMachineType } from '../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../src/controllers/runtime/types';

describe('virtctl expose', () => {
  it('selects the VM template labels and creates the Service with the flags', async () => {
    const store = await EmbeddedStore.open();
    const t: Target = {
      client: store,
      namespace: 'default',
      where: 'test',
      subresource: () => Promise.reject(new Error('unused')),
      close: () => {},
    };
    await store.create(VirtualMachineType, {
      apiVersion: 'kubevirt.io/v1',
      kind: 'VirtualMachine',
      metadata: { name: 'vm1', namespace: 'default' },
      spec: {
        runStrategy: 'Halted',
        template: { metadata: { labels: { 'kubevirt.io/vm': 'vm1' } }, spec: { domain: { devices: {} } } },
      },
    } as KubeObject);
    await exposeObject(t, 'vm', 'vm1', {
      name: 'vm1-echo',
      port: '80',
      targetPort: '8080',
      type: 'NodePort',
    });
    const svc = await store.get<KubeObject & { spec: unknown }>(ServiceType, 'vm1-echo', 'default');
    expect(svc.spec).toMatchObject({
      ports: [{ protocol: 'TCP', port: 80, targetPort: 8080 }],
      selector: { 'kubevirt.io/vm': 'vm1' },
      type: 'NodePort',
    });
    await expect(exposeObject(t, 'vm', 'nope', { name: 'x', port: '1' })).rejects.toThrow();
    await expect(exposeObject(t, 'pod', 'vm1', { name: 'x', port: '1' })).rejects.toThrow(
      'unsupported resource type "pod": vm, vmi or vmirs',
    );
  });

  it('takes a VMI its labels and a replica set its matchLabels, refusing what upstream refuses', () => {
    expect(exposeSelector('vmi', { metadata: { name: 'a', labels: { app: 'x' } } })).toEqual({ app: 'x' });
    expect(exposeSelector('vmirs', { spec: { selector: { matchLabels: { app: 'y' } } } })).toEqual({
      app: 'y',
    });
    expect(() => exposeSelector('vmi', { metadata: { name: 'a' } })).toThrow(
      'cannot expose VirtualMachineInstance without any label: a',
    );
    expect(() =>
      exposeSelector('vmirs', { spec: { selector: { matchLabels: { a: 'b' }, matchExpressions: [{}] } } }),
    ).toThrow('cannot expose VirtualMachineInstanceReplicaSet with match expressions');
  });

  it('checks the flags, naming them', () => {
    const sel = { app: 'x' };
    expect(
      exposeService('ns', sel, { name: 's', port: '22', targetPort: 'ssh', protocol: 'udp', portName: 'p' })
        .spec,
    ).toEqual({
      ports: [{ name: 'p', protocol: 'UDP', port: 22, targetPort: 'ssh' }],
      selector: sel,
      type: 'ClusterIP',
    });
    expect(() => exposeService('ns', sel, { port: '1' })).toThrow('--name: the service name is required');
    expect(() => exposeService('ns', sel, { name: 'Bad_Name', port: '1' })).toThrow(
      '--name: "Bad_Name" is not a valid service name',
    );
    expect(() => exposeService('ns', sel, { name: 's', port: '70000' })).toThrow(
      '--port: "70000" is not a port (1-65535)',
    );
    expect(() => exposeService('ns', sel, { name: 's', port: '1', type: 'Foo' })).toThrow(
      '--type: "Foo" is not one of ClusterIP, NodePort, LoadBalancer',
    );
    expect(() => exposeService('ns', sel, { name: 's', port: '1', protocol: 'ICMP' })).toThrow(
      '--protocol: "ICMP"',
    );
  });
});
