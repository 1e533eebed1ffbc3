/**
 * The VMI controller's MigrationRequired condition for secondary networks (upstream's
 * pkg/network/migration Evaluator): a hotplugged NIC the launcher pod was not created
 * with, another NetworkAttachmentDefinition, and an unplugged NIC the pod still has once
 * the domain let it go; nothing while the pod fits or a migration runs.
 */
import { describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../../src/api/generated/types';
import { multusNetworksAnnotation } from '../../../../src/controllers/common/multus';
import type { Pod } from '../../../../src/controllers/common/pod';
import { podNetworksOutdated } from '../../../../src/controllers/virt-controller/vmi/network-migration';
import { nextVmiStatus } from '../../../../src/controllers/virt-controller/vmi/status';

const vmi = (blue?: object, status: object = {}): VirtualMachineInstance =>
  ({
    metadata: { name: 'vm', namespace: 'ns', uid: 'u1' },
    spec: {
      domain: { devices: { interfaces: [{ name: 'default', masquerade: {} }, ...(blue ? [blue] : [])] } },
      networks: [
        { name: 'default', pod: {} },
        ...(blue ? [{ name: 'blue', multus: { networkName: 'blue-net' } }] : []),
      ],
    },
    status: { phase: 'Running', nodeName: 'n1', ...status },
  }) as unknown as VirtualMachineInstance;

/** A launcher pod rendered for `v` (its networks annotation). */
const podFor = (v: VirtualMachineInstance): Pod => {
  const a = multusNetworksAnnotation(v);
  return {
    metadata: {
      name: 'virt-launcher-vm-abcde',
      namespace: 'ns',
      uid: 'p1',
      ...(a ? { annotations: { 'k8s.v1.cni.cncf.io/networks': a } } : {}),
    },
    spec: { nodeName: 'n1', containers: [] },
    status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
  } as unknown as Pod;
};

describe('podNetworksOutdated', () => {
  it('says why a pod cannot carry a hotplugged NIC, another definition, or an unplugged one', () => {
    const blue = { name: 'blue', bridge: {} };
    expect(podNetworksOutdated(vmi(blue), podFor(vmi()))).toBe(
      'the launcher pod has no interface for network blue',
    );
    expect(podNetworksOutdated(vmi(blue), podFor(vmi(blue)))).toBeUndefined();
    const other = podFor(vmi(blue));
    other.metadata = {
      ...other.metadata,
      annotations: {
        'k8s.v1.cni.cncf.io/networks': '[{"name":"red-net","namespace":"ns","interface":"pod16477688c0e"}]',
      },
    };
    expect(podNetworksOutdated(vmi(blue), other)).toBe(
      'network blue names ns/blue-net, the launcher pod has ns/red-net',
    );
    // Unplugged: not while the domain still has it (its status entry), then the pod must go.
    const absent = { ...blue, state: 'absent' };
    const withBlue = podFor(vmi(blue));
    expect(multusNetworksAnnotation(vmi(absent))).toBeUndefined();
    expect(
      podNetworksOutdated(
        vmi(absent, { interfaces: [{ name: 'blue', podInterfaceName: 'pod16477688c0e' }] }),
        withBlue,
      ),
    ).toBeUndefined();
    expect(podNetworksOutdated(vmi(absent, { interfaces: [] }), withBlue)).toBe(
      'the launcher pod still has the interface of unplugged network blue',
    );
    // Also once the VM controller dropped the interface from the spec.
    expect(podNetworksOutdated(vmi(undefined, { interfaces: [] }), withBlue)).toBe(
      'the launcher pod still has the interface of unplugged network pod16477688c0e',
    );
  });

  it('sets MigrationRequired (AutoMigrationDueToLiveUpdate) on a running VMI, drops it once the pod fits, drops it while a migration runs', () => {
    const blue = { name: 'blue', bridge: {} };
    const now = '2026-12-05T01:00:00Z';
    const marked = nextVmiStatus({ vmi: vmi(blue), pod: podFor(vmi()), now });
    expect(marked.status?.conditions?.find((c) => c.type === 'MigrationRequired')).toMatchObject({
      status: 'True',
      reason: 'AutoMigrationDueToLiveUpdate',
      message: 'the launcher pod has no interface for network blue',
    });
    const migrating = {
      ...marked,
      status: { ...marked.status, migrationState: { startTimestamp: now } },
    } as VirtualMachineInstance;
    const during = nextVmiStatus({ vmi: migrating, pod: podFor(vmi(blue)), now });
    expect(during.status?.conditions?.some((c) => c.type === 'MigrationRequired')).toBe(false);
    const after = nextVmiStatus({ vmi: marked, pod: podFor(vmi(blue)), now });
    expect(after.status?.conditions?.some((c) => c.type === 'MigrationRequired')).toBe(false);
  });

  it('does not judge the source pod while a succeeded migration hands the VMI to its target pod', () => {
    const blue = { name: 'blue', bridge: {} };
    const now = '2026-12-05T01:00:00Z';
    const ended = {
      startTimestamp: now,
      endTimestamp: now,
      completed: true,
      targetPod: 'virt-launcher-vm-xyz12',
    };
    // The VMI's node is still the source's: the source pod (without blue) is the one picked.
    const handing = nextVmiStatus({ vmi: vmi(blue, { migrationState: ended }), pod: podFor(vmi()), now });
    expect(handing.status?.conditions?.some((c) => c.type === 'MigrationRequired')).toBe(false);
    // A failed migration leaves the VMI on that pod: it is judged again.
    const failed = nextVmiStatus({
      vmi: vmi(blue, { migrationState: { ...ended, failed: true } }),
      pod: podFor(vmi()),
      now,
    });
    expect(failed.status?.conditions?.find((c) => c.type === 'MigrationRequired')?.status).toBe('True');
  });
});
