import { describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import { firmwareUUIDForName } from '../../../src/api/defaults/firmware-uuid';
import {
  DefaultingError,
  defaultVirtualMachineInstance,
  defaultVirtualMachineInstanceSpec,
} from '../../../src/api/defaults/vmi-defaults';
import type { VirtualMachineInstance } from '../../../src/api/generated/types';
import { fixture } from '../../support/fixtures';

const amd64 = createClusterConfig({}, { hostArchitecture: 'amd64' });
const vmi = (file: string) => fixture<VirtualMachineInstance>(file);

describe('VMI defaulting on the fixture manifests', () => {
  it('vmi-containerdisk: machine, CPU, topology, pod network, finalizer, pull policy, status', () => {
    const input = vmi('vmi-containerdisk.yaml');
    const before = structuredClone(input);
    const out = defaultVirtualMachineInstance(input, amd64);
    expect(input).toEqual(before); // pure: the input is untouched
    const s = out.spec;
    expect(s.architecture).toBe('amd64');
    expect(s.domain.machine?.type).toBe('q35');
    expect(s.domain.cpu).toMatchObject({ model: 'host-model', sockets: 1, cores: 1, threads: 1 });
    expect(s.domain.devices.interfaces).toEqual([{ name: 'default', bridge: {} }]);
    expect(s.networks).toEqual([{ name: 'default', pod: {} }]);
    expect(s.volumes?.[0].containerDisk?.imagePullPolicy).toBe('IfNotPresent');
    expect(out.metadata?.finalizers).toEqual(['kubevirt.io/foregroundDeleteVirtualMachine']);
    expect(s.terminationGracePeriodSeconds).toBe(0); // set by the fixture, kept
    expect(out.status?.memory).toEqual({
      guestAtBoot: '128Mi',
      guestCurrent: '128Mi',
      guestRequested: '128Mi',
    });
    expect(out.status?.currentCPUTopology).toEqual({ sockets: 1, cores: 1, threads: 1 });
    expect(s.domain.firmware?.uuid).toBe(firmwareUUIDForName('vmi-containerdisk'));
  });

  it('vmi-autodisk: a SATA disk for every volume without one on amd64', () => {
    const out = defaultVirtualMachineInstance(vmi('vmi-autodisk.yaml'), amd64);
    expect(out.spec.domain.devices.disks).toEqual([{ name: 'containerdisk', disk: { bus: 'sata' } }]);
  });

  it('vmi-arm64 on arm64: virtio bus, host-passthrough, UEFI without secure boot, virt machine', () => {
    const input = vmi('vmi-arm64.yaml');
    input.spec.architecture = 'arm64';
    input.spec.domain.devices.disks = [{ name: 'containerdisk' }, { name: 'cloudinitdisk', cdrom: {} }];
    const out = defaultVirtualMachineInstance(input, createClusterConfig({}, { hostArchitecture: 'arm64' }));
    const s = out.spec;
    expect(s.domain.machine?.type).toBe('virt');
    expect(s.domain.cpu?.model).toBe('host-passthrough');
    expect(s.domain.firmware?.bootloader).toEqual({ efi: { secureBoot: false } });
    expect(s.domain.devices.disks?.[0]).toEqual({ name: 'containerdisk', disk: { bus: 'virtio' } });
    expect(s.domain.devices.disks?.[1]).toEqual({
      name: 'cloudinitdisk',
      cdrom: { bus: 'virtio', readonly: true, tray: 'closed' },
    });
    expect(s.domain.devices.disks?.[2]).toEqual({ name: 'emptydisk', disk: { bus: 'virtio' } });
  });

  it('vmi-windows: present features and timers enabled, spinlocks kept, SATA disk added', () => {
    const out = defaultVirtualMachineInstance(vmi('vmi-windows.yaml'), amd64);
    const f = out.spec.domain.features;
    expect(f?.acpi).toEqual({ enabled: true });
    expect(f?.smm).toEqual({ enabled: true });
    expect(f?.hyperv?.relaxed).toEqual({ enabled: true });
    expect(f?.hyperv?.spinlocks).toEqual({ enabled: true, spinlocks: 8191 });
    const t = out.spec.domain.clock?.timer;
    expect(t?.hpet).toEqual({ present: false });
    expect(t?.pit).toEqual({ tickPolicy: 'delay', present: true });
    expect(out.spec.domain.firmware?.uuid).toBe('0b9c2a58-7d1e-4f36-8e2a-55c1f3a9d4b7');
    expect(out.spec.domain.devices.disks).toEqual([{ name: 'pvcdisk', disk: { bus: 'sata' } }]);
    // cores set: topology left alone, and no sockets means no CPU hotplug headroom
    // (upstream's setupCPUHotplug multiplies the unset sockets, 0)
    expect(out.spec.domain.cpu).toEqual({ cores: 2, model: 'host-model' });
  });

  it('vmi-efi keeps secureBoot false; EFI without secureBoot gets true', () => {
    expect(
      defaultVirtualMachineInstance(vmi('vmi-efi.yaml'), amd64).spec.domain.firmware?.bootloader,
    ).toEqual({
      efi: { secureBoot: false },
    });
    const input = vmi('vmi-efi.yaml');
    input.spec.domain.firmware = { bootloader: { efi: {} } };
    expect(
      defaultVirtualMachineInstance(input, amd64).spec.domain.firmware?.bootloader?.efi?.secureBoot,
    ).toBe(true);
  });

  it('Hyper-V dependencies are switched on when missing', () => {
    const input = vmi('vmi-windows.yaml');
    input.spec.domain.features = { hyperv: { synictimer: {}, evmcs: {} } };
    const out = defaultVirtualMachineInstance(input, amd64);
    const h = out.spec.domain.features?.hyperv;
    expect(h?.synic).toEqual({ enabled: true });
    expect(h?.vpindex).toEqual({ enabled: true });
    expect(h?.vapic).toEqual({ enabled: true });
    expect(out.spec.domain.cpu?.features).toEqual([{ name: 'vmx', policy: 'require' }]);
  });

  it('watchdog gets the i6300esb model and the reset action', () => {
    const input = vmi('vmi-containerdisk.yaml');
    input.spec.domain.devices.watchdog = { name: 'wd' };
    expect(defaultVirtualMachineInstance(input, amd64).spec.domain.devices.watchdog).toEqual({
      name: 'wd',
      i6300esb: { action: 'reset' },
    });
  });

  it('grace period defaults to 30 seconds when unset', () => {
    const input = vmi('vmi-containerdisk.yaml');
    delete input.spec.terminationGracePeriodSeconds;
    expect(defaultVirtualMachineInstance(input, amd64).spec.terminationGracePeriodSeconds).toBe(30);
  });

  it('topology and guest memory come from limits', () => {
    const input = vmi('vmi-containerdisk.yaml');
    delete input.spec.domain.memory;
    input.spec.domain.resources = { limits: { cpu: '3', memory: '512Mi' } };
    const s = defaultVirtualMachineInstance(input, amd64).spec;
    expect(s.domain.cpu).toMatchObject({ sockets: 3, cores: 1, threads: 1 });
    expect(s.domain.resources?.requests).toEqual({ cpu: '3' });
    expect(s.domain.memory?.guest).toBe('512Mi');
  });

  it('guest memory falls back to the hugepage size', () => {
    const input = vmi('vmi-containerdisk.yaml');
    input.spec.domain.memory = { hugepages: { pageSize: '2Mi' } };
    expect(defaultVirtualMachineInstanceSpec(input.spec, amd64).domain.memory?.guest).toBe('2Mi');
  });

  it('a cluster CPU request other than 100m is written to the VMI', () => {
    const cfg = createClusterConfig({ cpuRequest: '250m' }, { hostArchitecture: 'amd64' });
    expect(
      defaultVirtualMachineInstanceSpec(vmi('vmi-containerdisk.yaml').spec, cfg).domain.resources?.requests,
    ).toEqual({
      cpu: '250m',
    });
    expect(
      defaultVirtualMachineInstanceSpec(vmi('vmi-containerdisk.yaml').spec, amd64).domain.resources,
    ).toEqual({});
  });

  it('the cluster CPU model wins over host-model', () => {
    const cfg = createClusterConfig({ cpuModel: 'Skylake-Server' }, { hostArchitecture: 'amd64' });
    expect(defaultVirtualMachineInstance(vmi('vmi-containerdisk.yaml'), cfg).spec.domain.cpu?.model).toBe(
      'Skylake-Server',
    );
  });

  it('masquerade default interface when the cluster asks for it; none with autoattachPodInterface false', () => {
    const cfg = createClusterConfig({ network: { defaultNetworkInterface: 'masquerade' } });
    expect(
      defaultVirtualMachineInstance(vmi('vmi-containerdisk.yaml'), cfg).spec.domain.devices.interfaces,
    ).toEqual([{ name: 'default', masquerade: {} }]);
    const input = vmi('vmi-containerdisk.yaml');
    input.spec.domain.devices.autoattachPodInterface = false;
    expect(defaultVirtualMachineInstance(input, amd64).spec.networks).toBeUndefined();
  });

  it('refuses a bridge default when bridge on the pod network is not permitted', () => {
    const cfg = createClusterConfig({ network: { permitBridgeInterfaceOnPodNetwork: false } });
    expect(() => defaultVirtualMachineInstance(vmi('vmi-containerdisk.yaml'), cfg)).toThrow(DefaultingError);
    try {
      defaultVirtualMachineInstance(vmi('vmi-containerdisk.yaml'), cfg);
    } catch (e) {
      expect((e as DefaultingError).errors).toEqual([
        {
          path: 'spec.domain.devices.interfaces',
          message: 'bridge interface is not enabled in kubevirt-config',
          type: 'FieldValueInvalid',
        },
      ]);
    }
  });

  it('probes get timing defaults; inputs become USB tablets', () => {
    const input = vmi('vmi-pod-masquerade.yaml');
    input.spec.readinessProbe = { guestAgentPing: {} };
    input.spec.domain.devices.inputs = [{ name: 'tablet', type: '' }];
    const s = defaultVirtualMachineInstance(input, amd64).spec;
    expect(s.readinessProbe).toEqual({
      guestAgentPing: {},
      timeoutSeconds: 1,
      periodSeconds: 10,
      successThreshold: 1,
      failureThreshold: 3,
    });
    expect(s.domain.devices.inputs).toEqual([{ name: 'tablet', type: 'tablet', bus: 'usb' }]);
  });

  it('CPU hotplug headroom under the LiveUpdate rollout strategy', () => {
    const cfg = createClusterConfig({ vmRolloutStrategy: 'LiveUpdate' }, { hostArchitecture: 'amd64' });
    const input = vmi('vmi-containerdisk.yaml');
    input.spec.domain.cpu = { sockets: 2 };
    expect(defaultVirtualMachineInstance(input, cfg).spec.domain.cpu?.maxSockets).toBe(8);
  });

  it('gives CPU and memory headroom by default: upstream defaults vmRolloutStrategy to LiveUpdate', () => {
    // setupCPUHotplug: 4 x sockets, capped at 512 vCPUs (but never below the sockets);
    // setupMemoryHotplug: 4 x guest for guests of 1Gi and more.
    const input = vmi('vmi-efi.yaml'); // 1Gi guest, no CPU topology
    const out = defaultVirtualMachineInstance(input, amd64);
    expect(out.spec.domain.cpu).toMatchObject({ sockets: 1, cores: 1, threads: 1, maxSockets: 4 });
    expect(out.spec.domain.memory).toEqual({ guest: '1Gi', maxGuest: '4Gi' });
    const wide = vmi('vmi-containerdisk.yaml');
    wide.spec.domain.cpu = { sockets: 4, cores: 32, threads: 2 };
    expect(defaultVirtualMachineInstance(wide, amd64).spec.domain.cpu?.maxSockets).toBe(8);
    const huge = vmi('vmi-containerdisk.yaml');
    huge.spec.domain.cpu = { sockets: 16, cores: 64, threads: 1 };
    expect(defaultVirtualMachineInstance(huge, amd64).spec.domain.cpu?.maxSockets).toBe(16);
    const stage = createClusterConfig({ vmRolloutStrategy: 'Stage' }, { hostArchitecture: 'amd64' });
    const staged = defaultVirtualMachineInstance(vmi('vmi-efi.yaml'), stage).spec.domain;
    expect(staged.cpu?.maxSockets).toBeUndefined();
    expect(staged.memory?.maxGuest).toBeUndefined();
  });

  it('firmware UUIDs follow upstream: SHA-1 UUIDv5 of the name', () => {
    expect(firmwareUUIDForName('vmi-containerdisk')).toMatch(
      /^[0-9a-f]{8}-[0-9a-f]{4}-5[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
    );
    expect(firmwareUUIDForName('a')).not.toBe(firmwareUUIDForName('b'));
  });

  it('marks the VMI Pending and non-root; records the phase time only when given', () => {
    const out = defaultVirtualMachineInstance(vmi('vmi-containerdisk.yaml'), amd64);
    expect(out.status?.phase).toBe('Pending');
    expect(out.status?.runtimeUser).toBe(107);
    expect(out.status?.phaseTransitionTimestamps).toBeUndefined();
    const at = new Date('2026-01-02T03:04:05Z');
    expect(
      defaultVirtualMachineInstance(vmi('vmi-containerdisk.yaml'), amd64, { now: at }).status
        ?.phaseTransitionTimestamps,
    ).toEqual([{ phase: 'Pending', phaseTransitionTimestamp: '2026-01-02T03:04:05.000Z' }]);
    const root = createClusterConfig({}, { hostArchitecture: 'amd64', featureGates: ['Root'] });
    expect(
      defaultVirtualMachineInstance(vmi('vmi-containerdisk.yaml'), root).status?.runtimeUser,
    ).toBeUndefined();
  });

  it('adds node selectors for SEV, SEV-ES, SNP and realtime guests', () => {
    const sev = vmi('vmi-efi.yaml');
    sev.spec.domain.launchSecurity = { sev: { policy: { encryptedState: true } } };
    expect(defaultVirtualMachineInstance(sev, amd64).spec.nodeSelector).toEqual({
      'kubevirt.io/sev': '',
      'kubevirt.io/sev-es': '',
    });
    const snp = vmi('vmi-efi.yaml');
    snp.spec.domain.launchSecurity = { snp: {} };
    expect(defaultVirtualMachineInstance(snp, amd64).spec.nodeSelector).toEqual({
      'kubevirt.io/sev': '',
      'kubevirt.io/sev-snp': '',
    });
    const rt = vmi('vmi-dedicated-cpu.yaml');
    rt.spec.domain.cpu!.realtime = {};
    rt.spec.nodeSelector = { zone: 'a' };
    expect(defaultVirtualMachineInstance(rt, amd64).spec.nodeSelector).toEqual({
      zone: 'a',
      'kubevirt.io/realtime': '',
    });
  });

  it('memory hotplug headroom under LiveUpdate only for eligible guests', () => {
    const cfg = createClusterConfig({ vmRolloutStrategy: 'LiveUpdate' }, { hostArchitecture: 'amd64' });
    const big = vmi('vmi-efi.yaml'); // 1Gi guest
    expect(defaultVirtualMachineInstance(big, cfg).spec.domain.memory).toEqual({
      guest: '1Gi',
      maxGuest: '4Gi',
    });
    const small = vmi('vmi-containerdisk.yaml'); // 128Mi guest: below the 1Gi minimum
    expect(defaultVirtualMachineInstance(small, cfg).spec.domain.memory).toEqual({ guest: '128Mi' });
    const capped = createClusterConfig(
      { vmRolloutStrategy: 'LiveUpdate', liveUpdateConfiguration: { maxGuest: '2Gi' } },
      { hostArchitecture: 'amd64' },
    );
    expect(defaultVirtualMachineInstance(vmi('vmi-efi.yaml'), capped).spec.domain.memory?.maxGuest).toBe(
      '2Gi',
    );
  });
});
