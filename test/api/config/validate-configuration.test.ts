import { describe, expect, it } from 'vitest';
import { validateKubeVirtConfiguration } from '../../../src/api/config/validate-configuration';

describe('KubeVirt configuration rules', () => {
  it('accepts an empty and a typical configuration', () => {
    expect(validateKubeVirtConfiguration({})).toEqual([]);
    expect(
      validateKubeVirtConfiguration({
        developerConfiguration: { featureGates: ['HostDisk'], useEmulation: true, memoryOvercommit: 150 },
        network: { defaultNetworkInterface: 'masquerade' },
        vmRolloutStrategy: 'LiveUpdate',
      }),
    ).toEqual([]);
  });

  it.each([
    [
      { developerConfiguration: { memoryOvercommit: 0 } },
      'spec.configuration.developerConfiguration.memoryOvercommit',
      'Invalid value: 0: must be greater than 0',
    ],
    [
      { developerConfiguration: { cpuAllocationRatio: -2 } },
      'spec.configuration.developerConfiguration.cpuAllocationRatio',
      'Invalid value: -2: must be greater than 0',
    ],
    [
      { network: { defaultNetworkInterface: 'slirp' } },
      'spec.configuration.network.defaultNetworkInterface',
      'Unsupported value: "slirp": supported values: "bridge", "masquerade"',
    ],
    [{ cpuRequest: 'lots' }, 'spec.configuration.cpuRequest', 'Invalid value: "lots": not a quantity'],
    [
      { architectureConfiguration: { amd64: { emulatedMachines: ['q35[*'] } } },
      'spec.configuration.architectureConfiguration.amd64.emulatedMachines[0]',
      'Invalid value: "q35[*": not a valid machine type pattern',
    ],
    [
      { vmRolloutStrategy: 'Rolling' },
      'spec.configuration.vmRolloutStrategy',
      'Unsupported value: "Rolling": supported values: "Stage", "LiveUpdate"',
    ],
  ])('%j is rejected at %s', (cfg, path, message) => {
    expect(validateKubeVirtConfiguration(cfg).map((e) => [e.path, e.message])).toEqual([[path, message]]);
  });
});
