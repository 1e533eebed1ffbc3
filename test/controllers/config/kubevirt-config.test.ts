import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mergeConfiguration } from '../../../src/api/config/cluster-config';
import type { KubeVirt } from '../../../src/api/generated/types';
import { KubeVirtConfigWatcher, pickKubeVirt } from '../../../src/controllers/config/kubevirt-config';
import { EmbeddedStore } from '../../../src/controllers/runtime/embedded/store';
import { KubeVirtType } from '../../../src/controllers/runtime/resources';
import type { KubeObject } from '../../../src/controllers/runtime/types';
import { waitFor } from '../../support/wait';

const kv = (name: string, configuration: Record<string, unknown>, created = '2026-01-01T00:00:00Z') =>
  ({
    apiVersion: 'kubevirt.io/v1',
    kind: 'KubeVirt',
    metadata: { name, namespace: 'kubevirt', creationTimestamp: created },
    spec: { configuration },
  }) as KubeVirt & KubeObject;

describe('choosing and merging', () => {
  it('takes the oldest KubeVirt that is not being deleted', () => {
    const old = kv('old', {}, '2026-01-01T00:00:00Z');
    const young = kv('young', {}, '2026-02-01T00:00:00Z');
    const gone = {
      ...kv('gone', {}, '2025-01-01T00:00:00Z'),
      metadata: { name: 'gone', deletionTimestamp: 'x' },
    };
    expect(pickKubeVirt([young, gone, old])?.metadata?.name).toBe('old');
    expect(pickKubeVirt([])).toBeUndefined();
  });

  it('lays overrides over each sub-configuration', () => {
    expect(
      mergeConfiguration(
        { developerConfiguration: { featureGates: ['HostDisk'], useEmulation: false }, cpuModel: 'x' },
        { developerConfiguration: { useEmulation: true } },
      ),
    ).toEqual({ developerConfiguration: { featureGates: ['HostDisk'], useEmulation: true }, cpuModel: 'x' });
  });
});

describe('KubeVirtConfigWatcher on the embedded store', () => {
  let store: EmbeddedStore;
  let watcher: KubeVirtConfigWatcher;
  const logs: string[] = [];
  let changes = 0;

  beforeEach(async () => {
    store = await EmbeddedStore.open();
    await store.create(
      { group: '', version: 'v1', kind: 'Namespace', plural: 'namespaces', namespaced: false },
      {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: { name: 'kubevirt' },
      },
    );
    logs.length = 0;
    changes = 0;
    watcher = new KubeVirtConfigWatcher({
      client: store,
      overrides: { developerConfiguration: { useEmulation: true } },
      onChange: () => changes++,
      log: (m) => logs.push(m),
    });
    await watcher.start();
  });
  afterEach(async () => {
    await watcher.stop();
    await store.close?.();
  });

  it("follows the resource's configuration, with the overrides on top", async () => {
    expect(watcher.current().isFeatureGateEnabled('HostDisk')).toBe(false);
    expect(watcher.current().useEmulation).toBe(true);
    await store.create(
      KubeVirtType,
      kv('kubevirt', {
        developerConfiguration: { featureGates: ['HostDisk'], useEmulation: false },
        migrations: { bandwidthPerMigration: '64Mi' },
      }),
    );
    await waitFor('HostDisk on', () => watcher.current().isFeatureGateEnabled('HostDisk'), 10_000);
    expect(watcher.current().useEmulation).toBe(true);
    expect(watcher.current().migrations.bandwidthPerMigration).toBe('64Mi');
    expect(changes).toBe(1);
  });

  it('keeps the last valid configuration when a new one fails validation, saying why', async () => {
    const created = await store.create(
      KubeVirtType,
      kv('kubevirt', { developerConfiguration: { featureGates: ['HostDisk'] } }),
    );
    await waitFor('HostDisk on', () => watcher.current().isFeatureGateEnabled('HostDisk'), 10_000);
    await store.update(KubeVirtType, {
      ...created,
      spec: { configuration: { developerConfiguration: { memoryOvercommit: 0 } } },
    } as KubeObject);
    const log = await waitFor('the refusal logged', () => logs.find((l) => l.includes('not taken')), 10_000);
    expect(log).toContain(
      'KubeVirt kubevirt/kubevirt: configuration not taken: spec.configuration.developerConfiguration.memoryOvercommit',
    );
    expect(watcher.current().isFeatureGateEnabled('HostDisk')).toBe(true);
  });
});

describe('KubeVirtConfigWatcher defaults', () => {
  it('lays defaults under the resource: used until a resource sets the field', async () => {
    const store = await EmbeddedStore.open({ namespaces: ['kubevirt'] });
    const watcher = new KubeVirtConfigWatcher({
      client: store,
      defaults: { network: { defaultNetworkInterface: 'masquerade' } },
    });
    try {
      await watcher.start();
      expect(watcher.current().defaultNetworkInterface).toBe('masquerade');
      await store.create(KubeVirtType, kv('kubevirt', { network: { defaultNetworkInterface: 'bridge' } }));
      await waitFor('bridge', () => watcher.current().defaultNetworkInterface === 'bridge');
    } finally {
      await watcher.stop();
      await store.close?.();
    }
  });
});
