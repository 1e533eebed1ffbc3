/**
 * Test harness: an in-memory embedded store with the virt-controller and the node
 * simulator running on it, plus helpers to wait for a state and to read writes.
 */

import { createClusterConfig, mergeConfiguration } from '../../../../src/api/config/cluster-config';
import type { KubeVirtConfiguration } from '../../../../src/api/generated/types';
import { registerCdiControllers } from '../../../../src/controllers/cdi-controller/cdi-controller';
import { EmbeddedStore } from '../../../../src/controllers/runtime/embedded/store';
import type { ResourceType } from '../../../../src/controllers/runtime/types';
import {
  VirtController,
  type VirtControllerOptions,
  type WriteRecord,
} from '../../../../src/controllers/virt-controller/virt-controller';
import { NodeSimulator, type NodeSimulatorOptions, type SimRole } from '../../../support/node-simulator';

export interface Harness {
  store: EmbeddedStore;
  ctrl: VirtController;
  sim: NodeSimulator;
  writes: WriteRecord[];
  simWrites: Array<{ role: SimRole; kind: string; name: string }>;
  errors: string[];
  /** Stops virt-controller and starts it again installing `launcherImage` (an upgrade's new one). */
  restartController(launcherImage: string): Promise<void>;
  stop(): Promise<void>;
}

export async function startHarness(
  opts: {
    sim?: NodeSimulatorOptions;
    types?: ResourceType[];
    useEmulation?: boolean;
    pools?: boolean;
    instancetypes?: boolean;
    volumes?: boolean;
    networkAttachments?: boolean;
    dataVolumeTemplates?: boolean;
    dataVolumes?: boolean;
    snapshots?: boolean;
    freezer?: VirtControllerOptions['freezer'];
    migrationPolicies?: boolean;
    evacuation?: boolean;
    /** Laid over the harness's KubeVirt configuration. */
    configuration?: KubeVirtConfiguration;
  } = {},
): Promise<Harness> {
  const store = await EmbeddedStore.open({ types: opts.types });
  const writes: WriteRecord[] = [];
  const simWrites: Harness['simWrites'] = [];
  const errors: string[] = [];
  const makeCtrl = (launcherImage: string) =>
    new VirtController({
      client: store,
      config: createClusterConfig(
        mergeConfiguration(
          { developerConfiguration: { useEmulation: opts.useEmulation ?? false } },
          opts.configuration,
        ),
        { hostArchitecture: 'amd64' },
      ),
      launcher: { launcherImage },
      pools: opts.pools,
      instancetypes: opts.instancetypes,
      volumes: opts.volumes,
      networkAttachments: opts.networkAttachments,
      dataVolumeTemplates: opts.dataVolumeTemplates,
      snapshots: opts.snapshots,
      freezer: opts.freezer,
      migrationPolicies: opts.migrationPolicies,
      evacuation: opts.evacuation,
      onWrite: (w) => writes.push(w),
      onError: (c, k, e) => errors.push(`${c} ${k}: ${e.message}`),
    });
  let ctrl = makeCtrl('kubevirt-ts/launcher:test');
  if (opts.dataVolumes)
    registerCdiControllers({
      manager: ctrl.manager,
      recorder: ctrl.recorder,
      importer: { image: 'kubevirt-ts/launcher:test' },
      workers: 2,
      onError: (c, k, e) => errors.push(`${c} ${k}: ${e.message}`),
    });
  const sim = new NodeSimulator(store, {
    ...opts.sim,
    onWrite: (role, kind, name) => simWrites.push({ role, kind, name }),
  });
  await ctrl.start();
  await sim.start();
  return {
    store,
    get ctrl() {
      return ctrl;
    },
    sim,
    writes,
    simWrites,
    errors,
    async restartController(launcherImage: string) {
      await ctrl.stop();
      ctrl = makeCtrl(launcherImage);
      await ctrl.start();
    },
    async stop() {
      await sim.stop();
      await ctrl.stop();
      await store.close();
    },
  };
}

export { waitFor } from '../../../support/wait';
