import { describe, expect, it } from 'vitest';
import type {
  VirtualMachine,
  VirtualMachinePool,
  VirtualMachinePoolSelectionPolicy,
} from '../../../../src/api/generated/types';
import { autohealVerdict, failingVms } from '../../../../src/controllers/virt-controller/pool/autoheal';
import {
  filterBySelectors,
  sortBySelectionPolicy,
} from '../../../../src/controllers/virt-controller/pool/selection';
import { maxUnavailable } from '../../../../src/controllers/virt-controller/pool/update-strategy';
import {
  buildPoolVm,
  indexVmSpec,
  POOL_REVISION_LABEL,
  updatedPoolVm,
} from '../../../../src/controllers/virt-controller/pool/vm-template';

function vm(
  name: string,
  extra: Partial<VirtualMachine> = {},
  created = '2026-01-01T00:00:00Z',
): VirtualMachine {
  return {
    metadata: { name, namespace: 'ns', creationTimestamp: created },
    spec: { template: { spec: { domain: { devices: {} } } } },
    ...extra,
  } as VirtualMachine;
}

const names = (vms: VirtualMachine[]) => vms.map((v) => v.metadata!.name);

describe('pool selection policy (upstream sortVMsBasedOnSortPolicy, filterVMsBasedOnSelectors)', () => {
  const vms = [
    vm('p-2', {}, '2026-01-01T00:00:01Z'),
    vm('p-10', {}, '2026-01-01T00:00:03Z'),
    vm('p-0', {}, '2026-01-01T00:00:02Z'),
  ];
  it('orders by index, by creation, or at random', () => {
    expect(names(sortBySelectionPolicy(vms, { sortPolicy: 'AscendingOrder' }))).toEqual([
      'p-0',
      'p-2',
      'p-10',
    ]);
    expect(names(sortBySelectionPolicy(vms, { sortPolicy: 'DescendingOrder' }))).toEqual([
      'p-10',
      'p-2',
      'p-0',
    ]);
    expect(names(sortBySelectionPolicy(vms, { sortPolicy: 'Newest' }))).toEqual(['p-10', 'p-0', 'p-2']);
    expect(names(sortBySelectionPolicy(vms, { sortPolicy: 'Oldest' }))).toEqual(['p-2', 'p-0', 'p-10']);
    // Random (the default): a Fisher-Yates shuffle; random() = 0 rotates the list.
    expect(names(sortBySelectionPolicy(vms, undefined, () => 0))).toEqual(['p-10', 'p-0', 'p-2']);
  });
  it('selects by the VM template labels and node selector', () => {
    const a = vm('p-0', {
      spec: {
        template: {
          metadata: { labels: { tier: 'a' } },
          spec: { domain: { devices: {} }, nodeSelector: { rack: '3' } },
        },
      },
    });
    const b = vm('p-1', {
      spec: {
        template: {
          metadata: { labels: { tier: 'b' } },
          spec: { domain: { devices: {} }, nodeSelector: { rack: '7' } },
        },
      },
    });
    expect(
      names(filterBySelectors([a, b], { selectors: { labelSelector: { matchLabels: { tier: 'b' } } } })),
    ).toEqual(['p-1']);
    const gt: VirtualMachinePoolSelectionPolicy = {
      selectors: { nodeSelectorRequirementMatcher: [{ key: 'rack', operator: 'Gt', values: ['4'] }] },
    };
    expect(names(filterBySelectors([a, b], gt))).toEqual(['p-1']);
    const notIn: VirtualMachinePoolSelectionPolicy = {
      selectors: { nodeSelectorRequirementMatcher: [{ key: 'rack', operator: 'NotIn', values: ['7'] }] },
    };
    expect(names(filterBySelectors([a, b], notIn))).toEqual(['p-0']);
    expect(names(filterBySelectors([a, b], { sortPolicy: 'Newest' }))).toEqual(['p-0', 'p-1']);
  });
});

describe('pool autohealing (upstream filterFailingVMsToStart)', () => {
  const now = new Date('2026-01-01T00:10:00Z');
  const failing = (count: number, printable = 'Running', notReadySince?: string) =>
    vm('p-0', {
      status: {
        printableStatus: printable,
        startFailure: count ? { consecutiveFailCount: count } : undefined,
        conditions: notReadySince
          ? [{ type: 'Ready', status: 'False', lastTransitionTime: notReadySince }]
          : [],
      },
    } as Partial<VirtualMachine>);
  it('replaces after startUpFailureThreshold consecutive start failures (default 3)', () => {
    expect(autohealVerdict(failing(2), {}, now).replace).toBe(false);
    expect(autohealVerdict(failing(3), {}, now).replace).toBe(true);
    expect(autohealVerdict(failing(1), { startUpFailureThreshold: 1 }, now).replace).toBe(true);
  });
  it('replaces a VM failing by status once not Ready for minFailingToStartDuration (default 5m)', () => {
    const v = failing(0, 'Unschedulable', '2026-01-01T00:08:00Z');
    expect(autohealVerdict(v, {}, now)).toEqual({ replace: false, retryInMs: 3 * 60_000 });
    expect(autohealVerdict(v, { minFailingToStartDuration: '1m30s' }, now)).toEqual({ replace: true });
    // Not a failing status: never replaced, however long it is not Ready.
    expect(autohealVerdict(failing(0, 'Stopped', '2026-01-01T00:00:00Z'), {}, now).replace).toBe(false);
    const deleting = { ...failing(5), metadata: { name: 'p-1', deletionTimestamp: '2026-01-01T00:09:00Z' } };
    expect(failingVms([v, deleting], {}, now)).toEqual({ replace: [], retryInMs: 3 * 60_000 });
  });
});

describe('pool VMs from the template (upstream indexVMSpec)', () => {
  const pool = {
    metadata: { name: 'p', namespace: 'ns', uid: 'u1', generation: 4 },
    spec: {
      selector: {},
      nameGeneration: { appendIndexToConfigMapRefs: true, appendIndexToSecretRefs: true },
      virtualMachineTemplate: {
        metadata: { labels: { app: 'x' } },
        spec: {
          dataVolumeTemplates: [{ metadata: { name: 'root' }, spec: {} }],
          template: {
            spec: {
              domain: { devices: {} },
              volumes: [
                { name: 'a', dataVolume: { name: 'root' } },
                { name: 'b', persistentVolumeClaim: { claimName: 'root' } },
                { name: 'c', configMap: { name: 'cm' } },
                { name: 'd', secret: { secretName: 's' } },
                {
                  name: 'e',
                  cloudInitNoCloud: { secretRef: { name: 'ud' }, networkDataSecretRef: { name: 'nd' } },
                },
                { name: 'f', persistentVolumeClaim: { claimName: 'shared' } },
              ],
            },
          },
        },
      },
    },
  } as unknown as VirtualMachinePool;
  it('suffixes DataVolume templates and, as nameGeneration asks, ConfigMap and Secret references', () => {
    const spec = indexVmSpec(pool, 2);
    expect(spec.dataVolumeTemplates![0]!.metadata!.name).toBe('root-2');
    expect(spec.template.spec!.volumes).toEqual([
      { name: 'a', dataVolume: { name: 'root-2' } },
      { name: 'b', persistentVolumeClaim: { claimName: 'root-2' } },
      { name: 'c', configMap: { name: 'cm-2' } },
      { name: 'd', secret: { secretName: 's-2' } },
      {
        name: 'e',
        cloudInitNoCloud: { secretRef: { name: 'ud-2' }, networkDataSecretRef: { name: 'nd-2' } },
      },
      { name: 'f', persistentVolumeClaim: { claimName: 'shared' } },
    ]);
    // The pool's own template is untouched.
    expect(pool.spec.virtualMachineTemplate.spec!.dataVolumeTemplates![0]!.metadata!.name).toBe('root');
  });
  it('labels the VM and its VMI template with the revision and keeps a VM firmware identity on update', () => {
    const v = buildPoolVm(pool, 1, 'p-4');
    expect(v.metadata).toMatchObject({ name: 'p-1', labels: { app: 'x', [POOL_REVISION_LABEL]: 'p-4' } });
    expect(v.spec.template.metadata!.labels![POOL_REVISION_LABEL]).toBe('p-4');
    const old = structuredClone(v);
    old.spec.template.spec!.domain.firmware = { uuid: 'uuid-1', serial: 'serial-1' };
    const next = updatedPoolVm(pool, old, 1, 'p-5');
    expect(next.spec.template.spec!.domain.firmware).toEqual({ uuid: 'uuid-1', serial: 'serial-1' });
    expect(next.metadata!.labels![POOL_REVISION_LABEL]).toBe('p-5');
  });
  it('counts maxUnavailable as upstream: an integer, or a percentage of replicas rounded down, at least 1', () => {
    const at = (replicas: number, m?: string | number) =>
      maxUnavailable({ ...pool, spec: { ...pool.spec, replicas, maxUnavailable: m } });
    expect(at(4)).toBe(4);
    expect(at(4, '50%')).toBe(2);
    expect(at(3, '10%')).toBe(1);
    expect(at(5, 2)).toBe(2);
  });
});
