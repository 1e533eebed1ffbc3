/** Local mode's admission takes the cluster configuration from a KubeVirt resource, as upstream's virt-api does. */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { stringify } from 'yaml';
import type { KubeVirt } from '../../../src/api/generated/types';
import { loadAndAdmit } from '../../../src/cli/local/apply';
import { ImageStore } from '../../../src/cli/local/images';

const vmi = {
  apiVersion: 'kubevirt.io/v1',
  kind: 'VirtualMachineInstance',
  metadata: { name: 'hd', namespace: 'default' },
  spec: {
    domain: {
      devices: { disks: [{ name: 'scratch', disk: { bus: 'virtio' } }] },
      resources: { requests: { memory: '64Mi' } },
    },
    volumes: [
      { name: 'scratch', hostDisk: { path: '/var/tmp/scratch.img', type: 'DiskOrCreate', capacity: '16Mi' } },
    ],
  },
};
const kubevirt = (gates: string[]): KubeVirt => ({
  apiVersion: 'kubevirt.io/v1',
  kind: 'KubeVirt',
  metadata: { name: 'kubevirt', namespace: 'kubevirt' },
  spec: { configuration: { developerConfiguration: { featureGates: gates } } },
});

describe('loadAndAdmit with a KubeVirt resource', () => {
  let dir: string;
  let images: ImageStore;
  const write = (name: string, docs: object[]) => {
    const f = join(dir, name);
    writeFileSync(f, docs.map((d) => stringify(d)).join('---\n'));
    return f;
  };
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'kvts-apply-'));
    images = new ImageStore(join(dir, 'images'));
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses a hostDisk without the HostDisk gate, naming the field', async () => {
    await expect(loadAndAdmit([write('a.yaml', [vmi])], images)).rejects.toThrow(
      'VirtualMachineInstance/hd: spec.volumes[0]: HostDisk feature gate is not enabled',
    );
  });

  it('admits it with the gate from a KubeVirt resource in the same batch, which it applies first', async () => {
    const out = await loadAndAdmit(
      [write('a.yaml', [vmi]), write('kv.yaml', [kubevirt(['HostDisk'])])],
      images,
    );
    expect(out.map((o) => o.kind)).toEqual(['KubeVirt', 'VirtualMachineInstance']);
  });

  it('admits it with the gate of the KubeVirt resource local mode already runs with', async () => {
    const out = await loadAndAdmit([write('a.yaml', [vmi])], images, true, kubevirt(['HostDisk']));
    expect(out.map((o) => o.kind)).toEqual(['VirtualMachineInstance']);
    // A resource in the batch wins over the running one.
    await expect(
      loadAndAdmit([write('b.yaml', [vmi, kubevirt([])])], images, true, kubevirt(['HostDisk'])),
    ).rejects.toThrow('HostDisk feature gate is not enabled');
  });
});
