/**
 * Reading a pod's secondary networks as Multus does: the annotation (upstream's JSON form
 * and the short `ns/name@iface` form), each definition's CNI configuration, and the
 * errors that name the definition (missing, unreadable, a chain of plugins).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseNetworksAnnotation } from '../../../../src/controllers/common/multus';
import type { Pod } from '../../../../src/controllers/common/pod';
import {
  cniConfigOf,
  secondaryAttachments,
} from '../../../../src/controllers/local/pod-runtime/secondary-networks';
import { EmbeddedStore } from '../../../../src/controllers/runtime/embedded/store';
import { NetworkAttachmentDefinitionType } from '../../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../../src/controllers/runtime/types';

const pod = (annotation: string) =>
  ({
    metadata: {
      name: 'p',
      namespace: 'default',
      uid: 'u',
      annotations: { 'k8s.v1.cni.cncf.io/networks': annotation },
    },
  }) as Pod;

describe('secondary networks of a local pod', () => {
  let store: EmbeddedStore;
  beforeAll(async () => {
    store = await EmbeddedStore.open({});
    await store.create(NetworkAttachmentDefinitionType, {
      metadata: { name: 'blue', namespace: 'default' },
      spec: { config: '{"cniVersion":"1.0.0","name":"blue","type":"bridge","bridge":"br-blue"}' },
    } as KubeObject);
    await store.create(NetworkAttachmentDefinitionType, {
      metadata: { name: 'chain', namespace: 'default' },
      spec: {
        config: '{"cniVersion":"1.0.0","name":"chain","plugins":[{"type":"bridge"},{"type":"tuning"}]}',
      },
    } as KubeObject);
  });
  afterAll(async () => {
    await store.close();
  });

  it('reads both annotation forms', () => {
    expect(
      parseNetworksAnnotation('[{"name":"a","namespace":"x","interface":"pod1"},{"name":"b"}]', 'default'),
    ).toEqual([
      { name: 'a', namespace: 'x', interface: 'pod1' },
      { name: 'b', namespace: 'default', interface: 'net2' },
    ]);
    expect(parseNetworksAnnotation('blue, other/red@eth7', 'ns1')).toEqual([
      { name: 'blue', namespace: 'ns1', interface: 'net1' },
      { name: 'red', namespace: 'other', interface: 'eth7' },
    ]);
    expect(() => parseNetworksAnnotation('[{"interface":"x"}]', 'd')).toThrow(
      'annotation k8s.v1.cni.cncf.io/networks: every element needs a name',
    );
  });

  it('takes a definition single plugin or one-plugin list, and names what it cannot run', () => {
    expect(
      cniConfigOf('d/n', '{"cniVersion":"0.4.0","name":"n","plugins":[{"type":"bridge","bridge":"b"}]}'),
    ).toEqual({
      cniVersion: '0.4.0',
      name: 'n',
      type: 'bridge',
      bridge: 'b',
    });
    expect(() => cniConfigOf('d/n', '')).toThrow(
      'NetworkAttachmentDefinition d/n: spec.config: no CNI configuration',
    );
    expect(() => cniConfigOf('d/n', '{"name":"n"}')).toThrow(
      'NetworkAttachmentDefinition d/n: spec.config: type: a CNI plugin name is required',
    );
  });

  it('resolves the definitions and fails naming a missing one', async () => {
    const got = await secondaryAttachments(
      pod('[{"name":"blue","namespace":"default","interface":"pod16477688c0e"}]'),
      store,
    );
    expect(got).toEqual([
      {
        network: 'default/blue',
        ifName: 'pod16477688c0e',
        config: { cniVersion: '1.0.0', name: 'blue', type: 'bridge', bridge: 'br-blue' },
      },
    ]);
    await expect(secondaryAttachments(pod('blue,nothere'), store)).rejects.toThrow(
      'failed to locate network attachment definition default/nothere',
    );
    await expect(secondaryAttachments(pod('chain'), store)).rejects.toThrow(
      'NetworkAttachmentDefinition default/chain: spec.config: plugins: 2 plugins; this runtime runs a list of exactly one',
    );
    await expect(secondaryAttachments(pod('blue@eth0'), store)).rejects.toThrow(
      'interface "eth0" is not a free interface name',
    );
    expect(
      await secondaryAttachments({ metadata: { name: 'p', namespace: 'default' } } as Pod, store),
    ).toEqual([]);
  });
});
