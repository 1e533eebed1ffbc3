/**
 * VirtualMachinePool rollout fields (upstream's VM pool admitter, and the refusal of
 * statePreservation, which is not built): each case edits the pool fixture and expects the
 * exact field path and message.
 */
import { describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import { admit } from '../../../src/api/validation/admission';
import { fixture } from '../../support/fixtures';

// biome-ignore lint/suspicious/noExplicitAny: the cases edit arbitrary fixture fields
type Obj = any;

const config = createClusterConfig({}, { hostArchitecture: 'amd64' });
const pool = (spec: Obj): Obj => {
  const p = fixture<Obj>('vmpool-containerdisk.yaml');
  p.spec = { ...p.spec, ...spec };
  return p;
};
const errors = (spec: Obj) => admit(pool(spec), config).errors.map((e) => [e.path, e.message]);

describe('VirtualMachinePool rollout field rules', () => {
  it('accepts every built strategy', () => {
    const selectionPolicy = {
      sortPolicy: 'Newest',
      selectors: {
        labelSelector: { matchLabels: { tier: 'a' } },
        nodeSelectorRequirementMatcher: [{ key: 'rack', operator: 'Gt', values: ['3'] }],
      },
    };
    expect(
      errors({
        maxUnavailable: '25%',
        autohealing: { startUpFailureThreshold: 2, minFailingToStartDuration: '2m30s' },
        updateStrategy: { proactive: { selectionPolicy } },
        scaleInStrategy: { proactive: { selectionPolicy, statePreservation: 'Disabled' } },
      }),
    ).toEqual([]);
    expect(
      errors({
        maxUnavailable: 2,
        updateStrategy: { opportunistic: {} },
        scaleInStrategy: { unmanaged: {} },
      }),
    ).toEqual([]);
  });

  it.each([
    [{ maxUnavailable: 0 }, 'spec.maxUnavailable', 'maxUnavailable must be greater than 0'],
    [{ maxUnavailable: '50' }, 'spec.maxUnavailable', 'maxUnavailable percentage must end with %'],
    [
      { maxUnavailable: '120%' },
      'spec.maxUnavailable',
      'maxUnavailable percentage value 120 must be between 1 and 100',
    ],
    [{ maxUnavailable: 'x%' }, 'spec.maxUnavailable', 'maxUnavailable percentage value "x" is invalid'],
    [
      { updateStrategy: { unmanaged: {}, proactive: {} } },
      'spec.updateStrategy',
      'only one strategy can be configured at a time: but found unmanaged, proactive strategies',
    ],
    [
      { scaleInStrategy: { opportunistic: {}, proactive: {} } },
      'spec.scaleInStrategy',
      'only one strategy can be configured at a time: but found opportunistic, proactive strategies',
    ],
    [
      { updateStrategy: { proactive: { selectionPolicy: { sortPolicy: 'Biggest' } } } },
      'spec.updateStrategy.proactive.selectionPolicy.sortPolicy',
      'Unsupported value: "Biggest": supported values: AscendingOrder, DescendingOrder, Newest, Oldest, Random',
    ],
    [
      {
        scaleInStrategy: {
          proactive: {
            selectionPolicy: {
              selectors: { nodeSelectorRequirementMatcher: [{ key: 'k', operator: 'Near' }] },
            },
          },
        },
      },
      'spec.scaleInStrategy.proactive.selectionPolicy.selectors.nodeSelectorRequirementMatcher[0].operator',
      'unsupported value "Near": supported values: "DoesNotExist", "Exists", "Gt", "In", "Lt", "NotIn"',
    ],
    [
      { scaleInStrategy: { opportunistic: { statePreservation: 'Offline' } } },
      'spec.scaleInStrategy.opportunistic.statePreservation',
      'Unsupported value: "Offline": only "Disabled" is supported; preserving the claims or memory of scaled-in VMs is not implemented',
    ],
    [
      { scaleInStrategy: { proactive: { statePreservation: 'Online' } } },
      'spec.scaleInStrategy.proactive.statePreservation',
      'Unsupported value: "Online": only "Disabled" is supported; preserving the claims or memory of scaled-in VMs is not implemented',
    ],
    [
      { autohealing: { startUpFailureThreshold: 0 } },
      'spec.autohealing.startUpFailureThreshold',
      'startUpFailureThreshold must be at least 1',
    ],
    [
      { autohealing: { minFailingToStartDuration: 'soon' } },
      'spec.autohealing.minFailingToStartDuration',
      'minFailingToStartDuration: "soon" is not a duration such as "24h" or "1h30m"',
    ],
  ])('%j: %s', (spec, path, message) => {
    expect(errors(spec)).toContainEqual([path, message]);
  });
});
