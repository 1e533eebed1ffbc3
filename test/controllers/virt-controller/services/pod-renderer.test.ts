import { describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../../src/api/config/cluster-config';
import type { VirtualMachineInstance } from '../../../../src/api/generated/types';
import {
  LAUNCHER_COMMAND,
  LauncherArgsError,
  parseLauncherArgs,
} from '../../../../src/controllers/common/launcher-args';
import { parseQuantity, quantityValue } from '../../../../src/controllers/common/quantity';
import { memoryOverhead } from '../../../../src/controllers/virt-controller/services/memory-overhead';
import {
  PodRenderError,
  renderLauncherPod,
  vmiId,
} from '../../../../src/controllers/virt-controller/services/pod-renderer';

const cfg = createClusterConfig({}, { hostArchitecture: 'amd64' });
const emulation = createClusterConfig(
  { developerConfiguration: { useEmulation: true } },
  { hostArchitecture: 'amd64' },
);
const opts = { launcherImage: 'kubevirt-ts/launcher:dev' };
const bytes = (s: string) => quantityValue(parseQuantity(s));

function vmi(
  spec: Partial<VirtualMachineInstance['spec']> = {},
  meta: Partial<NonNullable<VirtualMachineInstance['metadata']>> = {},
): VirtualMachineInstance {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: { name: 'testvmi', namespace: 'default', uid: '1234-abcd', labels: { app: 'x' }, ...meta },
    spec: {
      domain: {
        resources: { requests: { memory: '1Gi' } },
        cpu: { cores: 1, sockets: 1, threads: 1 },
        devices: { interfaces: [{ name: 'default', masquerade: {} }] },
      },
      networks: [{ name: 'default', pod: {} }],
      ...spec,
    } as VirtualMachineInstance['spec'],
  };
}

describe('renderLauncherPod: shape', () => {
  const pod = renderLauncherPod(vmi(), cfg, opts);
  const compute = pod.spec!.containers[0];

  it('has one compute container running the launcher with its args', () => {
    expect(pod.spec!.containers.map((c) => c.name)).toEqual(['compute']);
    expect(compute.command).toEqual([LAUNCHER_COMMAND]);
    expect(compute.image).toBe('kubevirt-ts/launcher:dev');
    expect(parseLauncherArgs(compute.args!)).toMatchObject({
      namespace: 'default',
      name: 'testvmi',
      uid: '1234-abcd',
      gracePeriodSeconds: 45, // 30 default + 15 padding
      hypervisor: 'libvirt',
      allowEmulation: false,
    });
  });

  it('never restarts, and its grace is the VMI grace plus twice 15 s', () => {
    expect(pod.spec!.restartPolicy).toBe('Never');
    expect(pod.spec!.terminationGracePeriodSeconds).toBe(60);
    const p = renderLauncherPod(vmi({ terminationGracePeriodSeconds: 0 }), cfg, opts);
    expect(p.spec!.terminationGracePeriodSeconds).toBe(30);
  });

  it('carries upstream labels, annotations and owner reference', () => {
    expect(pod.metadata!.generateName).toBe('virt-launcher-testvmi-');
    expect(pod.metadata!.labels).toEqual({
      app: 'x',
      'kubevirt.io': 'virt-launcher',
      'kubevirt.io/created-by': '1234-abcd',
      'vm.kubevirt.io/name': 'testvmi',
      'vmi.kubevirt.io/id': 'testvmi',
    });
    expect(pod.metadata!.annotations).toMatchObject({
      'kubevirt.io/domain': 'testvmi',
      'kubectl.kubernetes.io/default-container': 'compute',
      'kubevirt.io/migrationTransportUnix': 'true',
    });
    expect(pod.metadata!.ownerReferences).toEqual([
      {
        apiVersion: 'kubevirt.io/v1',
        kind: 'VirtualMachineInstance',
        name: 'testvmi',
        uid: '1234-abcd',
        controller: true,
        blockOwnerDeletion: true,
      },
    ]);
  });

  it('selects schedulable nodes', () => {
    expect(pod.spec!.nodeSelector).toEqual({ 'kubevirt.io/schedulable': 'true' });
  });

  it('requests memory plus overhead, CPU by the allocation ratio, and the device resources', () => {
    const overhead = memoryOverhead(vmi());
    // 1Gi + 304087040 = 1073741824 + 304087040 = 1377828864 bytes = exactly 1314Mi
    expect(overhead).toBe(304087040n);
    expect(compute.resources!.requests).toEqual({
      cpu: '100m', // 1 vCPU / cpuAllocationRatio 10
      memory: '1314Mi',
      'ephemeral-storage': '50M',
    });
    expect(compute.resources!.limits).toEqual({
      'devices.kubevirt.io/kvm': '1',
      'devices.kubevirt.io/tun': '1',
      'devices.kubevirt.io/vhost-net': '1',
    });
  });

  it('mounts the sockets and private dirs as emptyDirs', () => {
    const names = pod.spec!.volumes!.map((v) => v.name);
    expect(names).toEqual(
      expect.arrayContaining([
        'private',
        'public',
        'sockets',
        'libvirt-runtime',
        'ephemeral-disks',
        'container-disks',
        'hotplug-disks',
      ]),
    );
    expect(pod.spec!.volumes!.find((v) => v.name === 'sockets')).toEqual({ name: 'sockets', emptyDir: {} });
    expect(compute.volumeMounts).toContainEqual({ name: 'sockets', mountPath: '/var/run/kubevirt/sockets' });
  });
});

describe('renderLauncherPod: variants', () => {
  it('requests no kvm and no vhost-net under emulation, and tells the launcher', () => {
    const pod = renderLauncherPod(vmi(), emulation, opts);
    const c = pod.spec!.containers[0];
    expect(c.resources!.limits).toEqual({ 'devices.kubevirt.io/tun': '1' });
    expect(c.args).toContain('--allow-emulation');
    expect(parseLauncherArgs(c.args!).hypervisor).toBe('emulation');
  });

  it('pins dedicated CPUs: requests == limits, cpumanager selector, +100Mi overhead', () => {
    const v = vmi({
      domain: {
        resources: { requests: { memory: '2Gi' } },
        cpu: { cores: 4, dedicatedCpuPlacement: true, isolateEmulatorThread: true },
        devices: {},
      },
    });
    const pod = renderLauncherPod(v, cfg, opts);
    const r = pod.spec!.containers[0].resources!;
    // 4 vCPUs + 1 emulator thread
    expect(r.requests!.cpu).toBe('5');
    expect(r.limits!.cpu).toBe('5');
    expect(r.limits!.memory).toBe(r.requests!.memory);
    // overhead: pagetable(2Gi)=4194304 + 280Mi + 4*8Mi + 100Mi = 4194304 + 412Mi
    expect(BigInt(memoryOverhead(v))).toBe(4194304n + 412n * 1048576n);
    expect(pod.spec!.nodeSelector!.cpumanager).toBe('true');
    expect(pod.spec!.containers[0].securityContext!.capabilities!.add).toContain('SYS_NICE');
  });

  it('puts guest memory in hugepages and only the overhead in memory', () => {
    const v = vmi({
      domain: {
        resources: { requests: { memory: '1Gi' } },
        memory: { hugepages: { pageSize: '2Mi' } },
        devices: {},
      },
    });
    const r = renderLauncherPod(v, cfg, opts).spec!.containers[0].resources!;
    expect(r.requests!['hugepages-2Mi']).toBe('1Gi');
    expect(r.limits!['hugepages-2Mi']).toBe('1Gi');
    expect(bytes(r.requests!.memory)).toBe(memoryOverhead(v));
  });

  it('derives the memory request from guest memory with overcommit', () => {
    const over = createClusterConfig(
      { developerConfiguration: { memoryOvercommit: 200 } },
      { hostArchitecture: 'amd64' },
    );
    const v = vmi({ domain: { resources: {}, memory: { guest: '2Gi' }, devices: {} } });
    const r = renderLauncherPod(v, over, opts).spec!.containers[0].resources!;
    // request = 2Gi * 100 / 200 = 1Gi, plus overhead computed on the VMI's (empty) request
    expect(bytes(r.requests!.memory)).toBe((1n << 30n) + memoryOverhead(v));
  });

  it('leaves the overhead out of the memory request with overcommitGuestOverhead', () => {
    const v = vmi({
      domain: { resources: { requests: { memory: '1Gi' }, overcommitGuestOverhead: true }, devices: {} },
    });
    const r = renderLauncherPod(v, cfg, opts).spec!.containers[0].resources!;
    expect(bytes(r.requests!.memory)).toBe(1n << 30n);
  });

  it('selects SEV nodes and requests the SEV device', () => {
    const v = vmi({
      domain: {
        resources: { requests: { memory: '1Gi' } },
        launchSecurity: { sev: { policy: { encryptedState: true } } },
        devices: {},
      },
    });
    const pod = renderLauncherPod(v, cfg, opts);
    expect(pod.spec!.nodeSelector).toMatchObject({ 'kubevirt.io/sev': 'true', 'kubevirt.io/sev-es': 'true' });
    expect(pod.spec!.containers[0].resources!.requests!['devices.kubevirt.io/sev']).toBe('1');
    expect(pod.spec!.containers[0].resources!.limits!['devices.kubevirt.io/sev']).toBe('1');
  });

  it('adds CPU model, feature, machine type and user node selectors', () => {
    const v = vmi({
      nodeSelector: { zone: 'a' },
      domain: {
        resources: { requests: { memory: '1Gi' } },
        cpu: {
          model: 'Haswell',
          features: [
            { name: 'avx', policy: 'require' },
            { name: 'x2apic', policy: 'forbid' },
          ],
        },
        machine: { type: 'q35' },
        devices: {},
      },
    });
    expect(renderLauncherPod(v, cfg, opts).spec!.nodeSelector).toEqual({
      'kubevirt.io/schedulable': 'true',
      zone: 'a',
      'cpu-model.node.kubevirt.io/Haswell': 'true',
      'cpu-feature.node.kubevirt.io/avx': 'true',
      'machine-type.node.kubevirt.io/q35': 'true',
    });
  });

  it('counts GPUs and host devices as device-plugin resources', () => {
    const v = vmi({
      domain: {
        resources: { requests: { memory: '1Gi' } },
        devices: {
          gpus: [
            { name: 'g1', deviceName: 'nvidia.com/T4' },
            { name: 'g2', deviceName: 'nvidia.com/T4' },
          ],
          hostDevices: [{ name: 'h', deviceName: 'intel.com/qat' }],
        },
      },
    });
    const r = renderLauncherPod(v, cfg, opts).spec!.containers[0].resources!;
    expect(r.requests!['nvidia.com/T4']).toBe('2');
    expect(r.limits!['intel.com/qat']).toBe('1');
  });

  it('mounts PVCs and config volumes', () => {
    const v = vmi({
      volumes: [
        { name: 'root', persistentVolumeClaim: { claimName: 'disk-claim' } },
        { name: 'cfg', configMap: { name: 'app-config' } },
        { name: 'sec', secret: { secretName: 'creds' } },
      ],
    });
    const pod = renderLauncherPod(v, cfg, opts);
    expect(pod.spec!.volumes).toContainEqual({
      name: 'root',
      persistentVolumeClaim: { claimName: 'disk-claim' },
    });
    expect(pod.spec!.volumes).toContainEqual({ name: 'cfg', configMap: { name: 'app-config' } });
    expect(pod.spec!.containers[0].volumeMounts).toContainEqual({
      name: 'root',
      mountPath: '/var/run/kubevirt-private/vmi-disks/root',
    });
  });

  it('hashes long names into the vmi id label as upstream does', () => {
    const long = 'a'.repeat(70);
    const id = vmiId(long);
    expect(id).toHaveLength(63);
    expect(id.startsWith(`${'a'.repeat(54)}-`)).toBe(true);
    // sha1("a" * 70) starts with these 8 hex digits
    expect(id.slice(55)).toMatch(/^[0-9a-f]{8}$/);
  });
});

describe('renderLauncherPod: bad input', () => {
  it('rejects a name that would be unsafe as a launcher argument', () => {
    expect(() => renderLauncherPod(vmi({}, { name: '--evil' }), cfg, opts)).toThrow(LauncherArgsError);
    expect(() => renderLauncherPod(vmi({}, { name: 'a b' }), cfg, opts)).toThrow(
      /metadata\.name: "a b" is not a DNS-1123 subdomain/,
    );
    expect(() => renderLauncherPod(vmi({}, { uid: 'x;rm -rf' }), cfg, opts)).toThrow(/metadata\.uid/);
  });
  it('requires namespace and uid', () => {
    expect(() => renderLauncherPod(vmi({}, { uid: undefined }), cfg, opts)).toThrow(PodRenderError);
    expect(() => renderLauncherPod(vmi({}, { namespace: undefined }), cfg, opts)).toThrow(
      /metadata\.namespace: required/,
    );
  });
  it('rejects a hostDisk path with ..', () => {
    const v = vmi({ volumes: [{ name: 'h', hostDisk: { path: '/var/../etc/x.img', type: 'Disk' } }] });
    expect(() => renderLauncherPod(v, cfg, opts)).toThrow(/spec\.volumes\[0\]\.hostDisk\.path/);
  });
  it('names the field of a malformed memory quantity', () => {
    const v = vmi({ domain: { resources: { requests: { memory: '12 parsecs' } }, devices: {} } });
    expect(() => renderLauncherPod(v, cfg, opts)).toThrow(
      /spec\.domain\.resources\.requests\.memory: invalid quantity/,
    );
  });
});

describe('parseLauncherArgs', () => {
  it('rejects unknown flags and missing values', () => {
    expect(() => parseLauncherArgs(['--namespace', 'a', '--bogus'])).toThrow(/unknown flag "--bogus"/);
    expect(() => parseLauncherArgs(['--namespace'])).toThrow(/--namespace needs a value/);
    expect(() => parseLauncherArgs(['--namespace', 'a', '--name', 'b', '--uid', 'c'])).toThrow(
      /--grace-period-seconds is required/,
    );
  });
});
