import { describe, expect, it } from 'vitest';
import { validateKubeVirtConfiguration } from '../../../src/api/config/validate-configuration';
import type { KubeVirtConfiguration } from '../../../src/api/generated/types';

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
      {
        controllerConfiguration: {
          restClient: { rateLimiter: { tokenBucketRateLimiter: { qps: -1, burst: 10 } } },
        },
      },
      'spec.configuration.controllerConfiguration.restClient.rateLimiter.tokenBucketRateLimiter.qps',
      'Invalid value: -1: must be a number 0 or more (0: the default, 200)',
    ],
    [
      {
        handlerConfiguration: {
          restClient: { rateLimiter: { tokenBucketRateLimiter: { qps: 5, burst: '9' } } },
        },
      },
      'spec.configuration.handlerConfiguration.restClient.rateLimiter.tokenBucketRateLimiter.burst',
      'Invalid value: "9": must be a number 0 or more (0: the default, 100)',
    ],
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
    [
      { instancetype: { referencePolicy: 'expand' } },
      'spec.configuration.instancetype.referencePolicy',
      'Unsupported value: "expand": kubevirt-ts supports only "reference" (upstream\'s "expand" and "expandAll" are not built)',
    ],
  ])('%j is rejected at %s', (cfg, path, message) => {
    // Some hold what the type forbids (as a user's YAML can).
    expect(
      validateKubeVirtConfiguration(cfg as KubeVirtConfiguration).map((e) => [e.path, e.message]),
    ).toEqual([[path, message]]);
  });
});
