import { describe, expect, it } from 'vitest';
import { clusterConfigFromKubeVirt, createClusterConfig } from '../../../src/api/config/cluster-config';
import { FeatureGate, featureGateStates, unknownFeatureGates } from '../../../src/api/config/feature-gates';

describe('cluster configuration', () => {
  it("carries upstream's defaults", () => {
    const c = createClusterConfig({}, { hostArchitecture: 'amd64' });
    expect(c.defaultArchitecture).toBe('amd64');
    expect(c.machineType()).toBe('q35');
    expect(c.emulatedMachines()).toEqual(['q35*', 'pc-q35*']);
    expect(c.machineType('arm64')).toBe('virt');
    expect(c.emulatedMachines('arm64')).toEqual(['virt*']);
    expect(c.ovmfPath('arm64')).toBe('/usr/share/AAVMF');
    expect(c.cpuModel).toBe('');
    expect(c.cpuRequest).toBe('100m');
    expect(c.memoryOvercommit).toBe(100);
    expect(c.cpuAllocationRatio).toBe(10);
    expect(c.useEmulation).toBe(false);
    expect(c.defaultNetworkInterface).toBe('bridge');
    expect(c.permitBridgeInterfaceOnPodNetwork).toBe(true);
    // Upstream's DefaultVMRolloutStrategy (pkg/virt-config) is LiveUpdate.
    expect(c.vmRolloutStrategy).toBe('LiveUpdate');
    expect(c.migrations.parallelMigrationsPerCluster).toBe(5);
    expect(c.migrations.parallelOutboundMigrationsPerNode).toBe(2);
  });

  it('merges a KubeVirt CR over the defaults, keeping untouched defaults', () => {
    const c = clusterConfigFromKubeVirt(
      {
        apiVersion: 'kubevirt.io/v1',
        kind: 'KubeVirt',
        metadata: { name: 'kubevirt', namespace: 'kubevirt' },
        spec: {
          configuration: {
            cpuModel: 'Haswell',
            developerConfiguration: { useEmulation: true, memoryOvercommit: 150, featureGates: ['HostDisk'] },
            network: { defaultNetworkInterface: 'masquerade' },
            architectureConfiguration: { amd64: { machineType: 'pc-q35-7.2' } },
          },
        },
      },
      { hostArchitecture: 'amd64' },
    );
    expect(c.cpuModel).toBe('Haswell');
    expect(c.useEmulation).toBe(true);
    expect(c.memoryOvercommit).toBe(150);
    expect(c.cpuAllocationRatio).toBe(10);
    expect(c.defaultNetworkInterface).toBe('masquerade');
    expect(c.permitBridgeInterfaceOnPodNetwork).toBe(true);
    expect(c.machineType()).toBe('pc-q35-7.2');
    expect(c.emulatedMachines()).toEqual(['q35*', 'pc-q35*']);
    expect(c.isFeatureGateEnabled('HostDisk')).toBe(true);
  });

  it('a top-level machineType overrides every architecture', () => {
    const c = createClusterConfig({ machineType: 'pc-q35-rhel9' }, { hostArchitecture: 'amd64' });
    expect(c.machineType('arm64')).toBe('pc-q35-rhel9');
  });

  it('adds feature gates given as options', () => {
    const c = createClusterConfig(
      { developerConfiguration: { featureGates: ['Sidecar'] } },
      { featureGates: ['HostDisk'] },
    );
    expect(c.configuration.developerConfiguration?.featureGates).toEqual(['Sidecar', 'HostDisk']);
  });
});

describe('feature gates', () => {
  const cfg = (featureGates: string[] = [], disabledFeatureGates: string[] = []) =>
    createClusterConfig({ developerConfiguration: { featureGates, disabledFeatureGates } });

  it('alpha gates are off until listed', () => {
    expect(cfg().isFeatureGateEnabled(FeatureGate.Sidecar)).toBe(false);
    expect(cfg(['Sidecar']).isFeatureGateEnabled(FeatureGate.Sidecar)).toBe(true);
    expect(cfg(['Sidecar'], ['Sidecar']).isFeatureGateEnabled(FeatureGate.Sidecar)).toBe(false);
  });

  it('beta gates are on unless disabled', () => {
    expect(cfg().isFeatureGateEnabled(FeatureGate.Snapshot)).toBe(true);
    expect(cfg([], ['Snapshot']).isFeatureGateEnabled(FeatureGate.Snapshot)).toBe(false);
  });

  it('GA gates are always on and discontinued gates never', () => {
    expect(cfg([], ['GPU']).isFeatureGateEnabled(FeatureGate.GPU)).toBe(true);
    expect(cfg().isFeatureGateEnabled(FeatureGate.VMPersistentState)).toBe(true);
    expect(cfg(['Macvtap']).isFeatureGateEnabled(FeatureGate.Macvtap)).toBe(false);
  });

  it("uses upstream's names and states", () => {
    expect(FeatureGate.Ignition).toBe('ExperimentalIgnitionSupport');
    expect(FeatureGate.VirtIOFSStorageVolumes).toBe('EnableVirtioFsStorageVolumes');
    expect(featureGateStates.get('HostDisk')).toBe('Alpha');
    expect(featureGateStates.get('ExpandDisks')).toBe('GA');
    expect(featureGateStates.get('MultiArchitecture')).toBe('Deprecated');
    expect(unknownFeatureGates(['HostDisk', 'NoSuchGate'])).toEqual(['NoSuchGate']);
  });
});
