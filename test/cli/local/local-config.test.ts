/**
 * Local mode admits VMs with the masquerade binding as the default pod-network interface
 * (the binding its node sets up), unless the KubeVirt resource says otherwise.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import { loadAndAdmit } from '../../../src/cli/local/apply';
import { ImageStore } from '../../../src/cli/local/images';

const dir = mkdtempSync(join(tmpdir(), 'kvts-lcfg-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// A VMI: admission defaults it (a VM's template is defaulted when its VMI is created, with
// the same configuration: the KubeVirt watcher's, which takes the same defaults).
const vm = {
  apiVersion: 'kubevirt.io/v1',
  kind: 'VirtualMachineInstance',
  metadata: { name: 'v', namespace: 'default' },
  spec: { domain: { devices: {}, resources: { requests: { memory: '64Mi' } } } },
};

async function defaultInterface(extra: object[] = []) {
  const file = join(dir, `m-${extra.length}.yaml`);
  writeFileSync(file, [...extra, vm].map((d) => stringify(d)).join('---\n'));
  const objects = await loadAndAdmit([file], new ImageStore(join(dir, 'images')), true);
  const admitted = objects.find((o) => o.kind === 'VirtualMachineInstance') as unknown as {
    spec: { domain: { devices: { interfaces?: object[] } }; networks?: object[] };
  };
  return admitted.spec;
}

describe('local mode configuration defaults', () => {
  it('the default interface is masquerade on the pod network', async () => {
    const spec = await defaultInterface();
    expect(spec.domain.devices.interfaces).toEqual([{ name: 'default', masquerade: {} }]);
    expect(spec.networks).toEqual([{ name: 'default', pod: {} }]);
  });

  it('a KubeVirt resource choosing bridge wins', async () => {
    const kv = {
      apiVersion: 'kubevirt.io/v1',
      kind: 'KubeVirt',
      metadata: { name: 'kubevirt', namespace: 'kubevirt' },
      spec: { configuration: { network: { defaultNetworkInterface: 'bridge' } } },
    };
    const spec = await defaultInterface([kv]);
    expect(spec.domain.devices.interfaces).toEqual([{ name: 'default', bridge: {} }]);
  });
});
