/**
 * The VMI's scheduling and DNS fields reach the launcher pod: affinity, tolerations,
 * topologySpreadConstraints, schedulerName, priorityClassName, dnsPolicy, dnsConfig and
 * hostname (the field audit points here for them).
 */
import { describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../../src/api/config/cluster-config';
import type {
  Affinity,
  Toleration,
  TopologySpreadConstraint,
  VirtualMachineInstance,
} from '../../../../src/api/generated/types';
import { renderLauncherPod } from '../../../../src/controllers/virt-controller/services/pod-renderer';

const cfg = createClusterConfig({}, { hostArchitecture: 'amd64' });

function vmi(spec: Partial<VirtualMachineInstance['spec']>): VirtualMachineInstance {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: { name: 'testvmi', namespace: 'default', uid: '1234-abcd' },
    spec: {
      domain: {
        resources: { requests: { memory: '1Gi' } },
        devices: { interfaces: [{ name: 'default', masquerade: {} }] },
      },
      networks: [{ name: 'default', pod: {} }],
      ...spec,
    } as VirtualMachineInstance['spec'],
  };
}

describe('renderLauncherPod: scheduling and DNS fields', () => {
  const affinity: Affinity = {
    nodeAffinity: {
      preferredDuringSchedulingIgnoredDuringExecution: [
        { weight: 5, preference: { matchExpressions: [{ key: 'zone', operator: 'In', values: ['a'] }] } },
      ],
    },
    podAntiAffinity: {
      requiredDuringSchedulingIgnoredDuringExecution: [
        {
          topologyKey: 'kubernetes.io/hostname',
          labelSelector: { matchLabels: { app: 'db' } },
          matchLabelKeys: ['x'],
        },
      ],
    },
  };
  const tolerations: Toleration[] = [
    { key: 'k', operator: 'Equal', value: 'v', effect: 'NoExecute', tolerationSeconds: 30 },
  ];
  const topologySpreadConstraints: TopologySpreadConstraint[] = [
    {
      maxSkew: 1,
      topologyKey: 'zone',
      whenUnsatisfiable: 'DoNotSchedule',
      minDomains: 2,
      nodeAffinityPolicy: 'Honor',
      nodeTaintsPolicy: 'Ignore',
      matchLabelKeys: ['app'],
      labelSelector: { matchLabels: { app: 'db' } },
    },
  ];
  const dnsConfig = {
    nameservers: ['10.0.0.10'],
    searches: ['svc.local'],
    options: [{ name: 'ndots', value: '2' }],
  };
  const pod = renderLauncherPod(
    vmi({
      affinity,
      tolerations,
      topologySpreadConstraints,
      schedulerName: 'my-scheduler',
      priorityClassName: 'vip',
      dnsPolicy: 'None',
      dnsConfig,
      hostname: 'web-1',
    }),
    cfg,
    { launcherImage: 'kubevirt-ts/launcher:dev' },
  );

  it('copies affinity, tolerations and topology spread constraints', () => {
    // The renderer may add its own required node term (host-model CPUs); the VMI's are kept.
    expect(pod.spec!.affinity).toMatchObject(affinity);
    expect(pod.spec!.tolerations).toEqual(tolerations);
    expect(pod.spec!.topologySpreadConstraints).toEqual(topologySpreadConstraints);
  });

  it('sets schedulerName and priorityClassName', () => {
    expect(pod.spec!.schedulerName).toBe('my-scheduler');
    expect(pod.spec!.priorityClassName).toBe('vip');
  });

  it('sets dnsPolicy, dnsConfig and the hostname', () => {
    expect(pod.spec!.dnsPolicy).toBe('None');
    expect(pod.spec!.dnsConfig).toEqual(dnsConfig);
    expect(pod.spec!.hostname).toBe('web-1');
  });
});
