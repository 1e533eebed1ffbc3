import { describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../../src/api/config/cluster-config';
import type { VirtualMachineInstance } from '../../../../src/api/generated/types';
import { renderLauncherPod } from '../../../../src/controllers/virt-controller/services/pod-renderer';

const cfg = createClusterConfig({}, { hostArchitecture: 'amd64' });
const opts = { launcherImage: 'kubevirt-ts/launcher:dev' };

function vmi(spec: Partial<VirtualMachineInstance['spec']>): VirtualMachineInstance {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: { name: 'probed', namespace: 'ns1', uid: '1234-abcd' },
    spec: {
      domain: {
        resources: { requests: { memory: '128Mi' } },
        devices: { interfaces: [{ name: 'default', masquerade: {}, ports: [{ name: 'web', port: 8080 }] }] },
      },
      networks: [{ name: 'default', pod: {} }],
      ...spec,
    } as VirtualMachineInstance['spec'],
  };
}

const compute = (v: VirtualMachineInstance) => renderLauncherPod(v, cfg, opts).spec!.containers[0];

describe('renderLauncherPod: probes (upstream rendercontainer.go)', () => {
  it('copies tcpSocket and httpGet probes with the libvirt startup delay added', () => {
    const c = compute(
      vmi({
        readinessProbe: { tcpSocket: { port: 1500 }, initialDelaySeconds: 5, periodSeconds: 2 },
        livenessProbe: { httpGet: { port: 'web', path: '/healthz' }, failureThreshold: 2 },
      }),
    );
    expect(c.readinessProbe).toEqual({
      tcpSocket: { port: 1500 },
      initialDelaySeconds: 15,
      timeoutSeconds: 1,
      periodSeconds: 2,
      successThreshold: 1,
      failureThreshold: 3,
    });
    expect(c.livenessProbe).toEqual({
      httpGet: { port: 'web', path: '/healthz' },
      initialDelaySeconds: 10,
      timeoutSeconds: 1,
      periodSeconds: 10,
      successThreshold: 1,
      failureThreshold: 2,
    });
    // A named probe port resolves against the container's ports, the VMI's interface ports.
    expect(c.ports).toEqual([{ name: 'web', containerPort: 8080, protocol: 'TCP' }]);
  });

  it('wraps exec and guestAgentPing in virt-probe, one second longer', () => {
    const c = compute(
      vmi({
        readinessProbe: { exec: { command: ['cat', '/tmp/healthy'] }, timeoutSeconds: 3 },
        livenessProbe: { guestAgentPing: {} },
      }),
    );
    expect(c.readinessProbe?.exec?.command).toEqual([
      'kubevirt-ts',
      'virt-probe',
      '--domainName',
      'ns1_probed',
      '--timeoutSeconds',
      '3',
      '--command',
      'cat',
      '--',
      '/tmp/healthy',
    ]);
    expect(c.readinessProbe?.timeoutSeconds).toBe(4);
    expect(c.livenessProbe?.exec?.command).toEqual([
      'kubevirt-ts',
      'virt-probe',
      '--domainName',
      'ns1_probed',
      '--timeoutSeconds',
      '1',
      '--guestAgentPing',
    ]);
    expect(c.livenessProbe?.timeoutSeconds).toBe(2);
  });

  it('renders no probes or ports for a VMI without them', () => {
    const v = vmi({});
    v.spec.domain.devices.interfaces = [{ name: 'default', masquerade: {} }];
    const c = compute(v);
    expect(c.readinessProbe).toBeUndefined();
    expect(c.livenessProbe).toBeUndefined();
    expect(c.ports).toBeUndefined();
  });
});
