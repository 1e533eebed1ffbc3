/** Compute configurators: cpu (model, topology, pinning, real-time, hotplug), iothreads and memory. */
import { describe, expect, it } from 'vitest';
import {
  cpuConfigurator,
  disksConfigurator,
  iothreadsConfigurator,
  memoryConfigurator,
} from '../../../src/converter/configurators';
import { testContext } from '../support/contexts';
import { run, vmi } from '../support/run';

describe('cpu configurator', () => {
  it('uses host-model with the topology, also under emulation, where host-passthrough becomes maximum', () => {
    const spec = vmi({ domain: { cpu: { sockets: 2, cores: 2, threads: 1 } } });
    const d = run([cpuConfigurator], spec);
    expect(d.cpu).toEqual({ mode: 'host-model', topology: { sockets: 2, cores: 2, threads: 1 } });
    expect(d.vcpu).toEqual({ placement: 'static', value: 4 });
    const tcg = testContext({ kvmAvailable: false, allowEmulation: true });
    expect(run([cpuConfigurator], spec, tcg).cpu!.mode).toBe('host-model');
    const passthrough = vmi({ domain: { cpu: { model: 'host-passthrough' } } });
    expect(run([cpuConfigurator], passthrough, tcg).cpu!.mode).toBe('maximum');
    expect(run([cpuConfigurator], passthrough).cpu!.mode).toBe('host-passthrough');
  });

  it('disables mpx on named x86 models unless the VMI states it (upstream CPUDomainConfigurator)', () => {
    const named = (features?: { name: string; policy?: string }[]) =>
      vmi({ domain: { cpu: { model: 'Skylake-Server', features } } });
    expect(run([cpuConfigurator], named()).cpu!.feature).toEqual([{ policy: 'disable', name: 'mpx' }]);
    expect(run([cpuConfigurator], named([{ name: 'vmx', policy: 'require' }])).cpu!.feature).toEqual([
      { policy: 'require', name: 'vmx' },
      { policy: 'disable', name: 'mpx' },
    ]);
    expect(run([cpuConfigurator], named([{ name: 'mpx', policy: 'require' }])).cpu!.feature).toEqual([
      { policy: 'require', name: 'mpx' },
    ]);
    expect(
      run([cpuConfigurator], vmi({ domain: { cpu: { model: 'host-model' } } })).cpu!.feature,
    ).toBeUndefined();
    const arm = testContext({ arch: 'aarch64' });
    expect(run([cpuConfigurator], named(), arm).cpu!.feature).toBeUndefined();
  });

  it('pins dedicated vCPUs and the emulator thread, and needs enough pinned CPUs', () => {
    const spec = vmi({
      domain: { cpu: { cores: 2, dedicatedCpuPlacement: true, isolateEmulatorThread: true } },
    });
    expect(run([cpuConfigurator], spec).cputune).toEqual({
      vcpupin: [
        { vcpu: 0, cpuset: '2' },
        { vcpu: 1, cpuset: '3' },
      ],
      emulatorpin: { cpuset: '4' },
    });
    expect(() => run([cpuConfigurator], spec, testContext({ cpuSet: [1, 2] }))).toThrow(
      'spec.domain.cpu.dedicatedCpuPlacement: needs 3 pinned host CPUs in the converter context (cpuSet), got 2',
    );
  });

  it('schedules real-time vCPUs with SCHED_FIFO, only with dedicated CPUs', () => {
    const rt = (realtime: object, dedicated = true) =>
      vmi({ domain: { cpu: { cores: 2, dedicatedCpuPlacement: dedicated, realtime } } });
    expect(run([cpuConfigurator], rt({})).cputune!.vcpusched).toEqual([
      { vcpus: '0-1', scheduler: 'fifo', priority: 1 },
    ]);
    expect(run([cpuConfigurator], rt({ mask: '0-1,^0' })).cputune!.vcpusched![0].vcpus).toBe('0-1,^0');
    expect(() => run([cpuConfigurator], rt({ mask: '0;rm' }))).toThrow(
      "spec.domain.cpu.realtime.mask: '0;rm' is not a CPU list such as 0-3,^2",
    );
    expect(() => run([cpuConfigurator], rt({}, false))).toThrow(
      'spec.domain.cpu.realtime: requires dedicatedCpuPlacement',
    );
  });

  it('supports CPU hotplug headroom with maxSockets', () => {
    const d = run([cpuConfigurator], vmi({ domain: { cpu: { sockets: 1, maxSockets: 4, cores: 2 } } }));
    expect(d.vcpu).toEqual({ placement: 'static', value: 8 });
    expect(d.vcpus!.vcpu.map((v) => `${v.id}:${v.enabled}:${v.hotpluggable}`)).toEqual([
      '0:yes:no',
      '1:yes:no',
      '2:no:yes',
      '3:no:yes',
      '4:no:yes',
      '5:no:yes',
      '6:no:yes',
      '7:no:yes',
    ]);
    expect(d.cpu!.topology).toEqual({ sockets: 4, cores: 2, threads: 1 });
  });
});

describe('iothreads configurator', () => {
  const disks = (policy: string | undefined) =>
    vmi({
      volumes: ['a', 'b', 'c'].map((n) => ({ name: n, emptyDisk: { capacity: '1Gi' } })),
      domain: {
        ioThreadsPolicy: policy,
        devices: { disks: ['a', 'b', 'c'].map((n) => ({ name: n, disk: { bus: 'virtio' } })) },
      },
    });
  it('shares one thread, or spreads over up to 2x vCPUs with auto', () => {
    const shared = run([disksConfigurator, iothreadsConfigurator], disks('shared'));
    expect(shared.iothreads).toBe(1);
    expect(shared.devices.disk!.map((d) => d.driver!.iothread)).toEqual([1, 1, 1]);
    const auto = run([disksConfigurator, iothreadsConfigurator], disks('auto'));
    expect(auto.iothreads).toBe(2);
    expect(auto.devices.disk!.map((d) => d.driver!.iothread)).toEqual([1, 2, 1]);
    expect(run([disksConfigurator, iothreadsConfigurator], disks(undefined)).iothreads).toBeUndefined();
  });
  it('sizes the auto pool from the pod CPU request, not the vCPU count (upstream getThreadPoolLimit)', () => {
    const many = (resources?: object, cpu: object = { sockets: 16 }) =>
      vmi({
        volumes: Array.from({ length: 16 }, (_, i) => ({ name: `d${i}`, emptyDisk: { capacity: '1Gi' } })),
        domain: {
          ioThreadsPolicy: 'auto',
          cpu,
          resources,
          devices: {
            disks: Array.from({ length: 16 }, (_, i) => ({ name: `d${i}`, disk: { bus: 'virtio' } })),
          },
        },
      });
    // No request: one CPU, so two threads for 16 disks on 16 vCPUs.
    expect(run([disksConfigurator, iothreadsConfigurator], many()).iothreads).toBe(2);
    // A request of 2.5 CPUs rounds up to 3: six threads.
    expect(
      run([disksConfigurator, iothreadsConfigurator], many({ requests: { cpu: '2500m' } })).iothreads,
    ).toBe(6);
    expect(run([disksConfigurator, iothreadsConfigurator], many({ limits: { cpu: '4' } })).iothreads).toBe(8);
    // An isolated emulator thread takes the one shared IO thread.
    const isolated = many(undefined, { cores: 2, dedicatedCpuPlacement: true, isolateEmulatorThread: true });
    const d = run([disksConfigurator, cpuConfigurator, iothreadsConfigurator], isolated);
    expect(d.iothreads).toBe(1);
    expect(d.cputune!.iothreadpin).toEqual([{ iothread: 1, cpuset: '4' }]);
  });

  it('pins only IO thread 1 beside an isolated emulator thread, else spreads threads over the vCPU CPUs (upstream FormatDomainIOThreadPin)', () => {
    const dedicated = (isolate: boolean) =>
      vmi({
        volumes: ['a', 'b', 'c'].map((n) => ({ name: n, emptyDisk: { capacity: '1Gi' } })),
        domain: {
          ioThreadsPolicy: 'shared',
          cpu: { cores: 4, dedicatedCpuPlacement: true, isolateEmulatorThread: isolate },
          devices: {
            disks: [
              { name: 'a', disk: { bus: 'virtio' } },
              { name: 'b', disk: { bus: 'virtio' }, dedicatedIOThread: true },
              { name: 'c', disk: { bus: 'virtio' }, dedicatedIOThread: true },
            ],
          },
        },
      });
    const pins = (v: ReturnType<typeof vmi>) =>
      run([disksConfigurator, cpuConfigurator, iothreadsConfigurator], v).cputune!.iothreadpin;
    expect(pins(dedicated(true))).toEqual([{ iothread: 1, cpuset: '6' }]);
    // Three threads over vCPU CPUs 2,3,4,5: 2,3 / 4 / 5.
    expect(pins(dedicated(false))).toEqual([
      { iothread: 1, cpuset: '2,3' },
      { iothread: 2, cpuset: '4' },
      { iothread: 3, cpuset: '5' },
    ]);
  });

  it('rejects an unknown policy', () => {
    expect(() => run([disksConfigurator, iothreadsConfigurator], disks('many'))).toThrow(
      "spec.domain.ioThreadsPolicy: 'many' is not one of shared, auto, supplementalPool",
    );
  });
});

describe('memory configurator', () => {
  it('sizes memory in KiB from memory.guest or the request, with hugepages and hotplug headroom', () => {
    expect(run([memoryConfigurator], vmi({ domain: { memory: { guest: '1024M' } } })).memory).toEqual({
      unit: 'KiB',
      value: 1000000,
    });
    expect(
      run(
        [memoryConfigurator],
        vmi({ domain: { memory: undefined, resources: { requests: { memory: '64Mi' } } } }),
      ).memory.value,
    ).toBe(65536);
    const hp = run(
      [memoryConfigurator],
      vmi({ domain: { memory: { guest: '1Gi', hugepages: { pageSize: '1Gi' } } } }),
    );
    expect(hp.memoryBacking).toEqual({ hugepages: { page: [{ size: 1048576, unit: 'KiB' }] } });
    const hot = run(
      [cpuConfigurator, memoryConfigurator],
      vmi({ domain: { memory: { guest: '1Gi', maxGuest: '4Gi' } } }),
    );
    expect(hot.maxMemory).toEqual({ unit: 'KiB', slots: 16, value: 4194304 });
    expect(hot.cpu!.numa).toEqual({ cell: [{ id: 0, cpus: '0-0', memory: 1048576, unit: 'KiB' }] });
    expect(() => run([memoryConfigurator], vmi({ domain: { memory: {} } }))).toThrow(/no guest memory/);
  });
});
