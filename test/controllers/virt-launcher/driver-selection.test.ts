/**
 * How a launcher's driver is chosen: the pod renderer names it from the configuration's
 * useEmulation (what `kubevirt-ts up --kvm` and the example virt-controller's --kvm turn
 * off), every name it renders is a driver the launcher has, and the `libvirt` driver
 * picks domain type kvm exactly when the host probe offers a usable KVM. The probe is
 * faked for the choice itself; on this host's qemu:///system the domains are only
 * rendered, never started (KVM guests crawl here).
 */
import { spawnSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import { LOCAL_LAUNCHER, localConfigOverrides } from '../../../src/cli/local/local-node';
import { parseLauncherArgs } from '../../../src/controllers/common/launcher-args';
import { renderLauncherPod } from '../../../src/controllers/virt-controller/services/pod-renderer';
import { launcherDriverFactories } from '../../../src/controllers/virt-launcher/drivers';
import { upstreamPaths } from '../../../src/converter';
import { chooseVirtType } from '../../../src/drivers/emulation/virt-type';
import { toHostCapabilities } from '../../../src/drivers/libvirt-driver/host-probe';
import type { LibvirtDriver } from '../../../src/drivers/libvirt-driver/libvirt-driver';
import { daemonAvailable, daemonMissing } from '../../drivers/libvirt-driver/support';
import { defaultedLauncherVmi } from './tiny-guest-vmi';

const vmi = defaultedLauncherVmi(
  'kvts-drivers',
  `driver-select-${process.pid}`,
  `uid-select-${process.pid}`,
  {
    domain: { devices: { autoattachPodInterface: false }, resources: { requests: { memory: '64Mi' } } },
  },
);

function renderedDriver(useEmulation: boolean): string {
  const config = createClusterConfig(
    { developerConfiguration: { useEmulation } },
    { hostArchitecture: 'amd64' },
  );
  const pod = renderLauncherPod(vmi, config, LOCAL_LAUNCHER);
  return parseLauncherArgs(pod.spec!.containers[0].args!).hypervisor;
}

describe('the launcher driver a local-mode pod names', () => {
  it('is libvirt when emulation is off (up --kvm) and emulation when it is on (plain up)', () => {
    expect(localConfigOverrides(true).developerConfiguration?.useEmulation).toBe(false);
    expect(localConfigOverrides(false).developerConfiguration?.useEmulation).toBe(true);
    expect(renderedDriver(false)).toBe('libvirt');
    expect(renderedDriver(true)).toBe('emulation');
  });

  it('is one the launcher has a factory for', () => {
    expect(Object.keys(launcherDriverFactories)).toEqual(expect.arrayContaining(['libvirt', 'emulation']));
    expect(launcherDriverFactories[renderedDriver(false)]).toBeTypeOf('function');
    expect(launcherDriverFactories[renderedDriver(true)]).toBeTypeOf('function');
  });
});

/** Host capabilities as the libvirt driver's probe builds them, from libvirt's domain types. */
function probed(domainTypes: string[], allowKvm: boolean) {
  return toHostCapabilities({
    driverName: allowKvm ? 'libvirt' : 'emulation',
    host: { arch: 'x86_64', domainTypes, cpuFeatures: [], hugepageSizesKiB: [], machineTypes: ['q35'] },
    nodeMemoryKiB: 1 << 20,
    nodeCpus: 2,
    allowKvm,
    testDriver: false,
  });
}

describe('domain type from a faked host probe', () => {
  const subject = 'VirtualMachineInstance kvts-drivers/x';
  it('is kvm for the libvirt driver where libvirt offers kvm (/dev/kvm usable)', () => {
    const caps = probed(['qemu', 'kvm'], true);
    expect(caps.kvmUsable).toBe(true);
    expect(chooseVirtType({ capabilities: caps, useEmulation: false, subject })).toBe('kvm');
    expect(chooseVirtType({ capabilities: caps, useEmulation: true, subject })).toBe('kvm');
  });

  it('is qemu for the emulation driver even where kvm is offered', () => {
    const caps = probed(['qemu', 'kvm'], false);
    expect(caps.kvmUsable).toBe(false);
    expect(chooseVirtType({ capabilities: caps, useEmulation: true, subject })).toBe('qemu');
  });

  it('refuses, naming the VMI and the setting, where kvm is required but not offered', () => {
    const caps = probed(['qemu'], true);
    expect(() => chooseVirtType({ capabilities: caps, useEmulation: false, subject })).toThrow(
      /kvts-drivers\/x: KVM is not usable on this host.*useEmulation: true/,
    );
  });
});

const kvmOffered =
  daemonAvailable &&
  /<domain type=['"]kvm['"]/.test(
    spawnSync('virsh', ['-c', 'qemu:///system', 'capabilities'], { encoding: 'utf8' }).stdout ?? '',
  );
// Not an `integration()` gate: the test command requires libvirtd, not KVM, so a host
// without /dev/kvm skips this (saying why) even under KUBEVIRT_TS_REQUIRE_INTEGRATION.
if (!kvmOffered) {
  console.warn(
    `skipping the kvm rendering test: ${daemonAvailable ? "qemu:///system's capabilities offer no kvm domain type (/dev/kvm missing or unusable)" : daemonMissing}`,
  );
}

describe.runIf(kvmOffered)('the launcher drivers on qemu:///system, rendering only', () => {
  const ctx = { paths: upstreamPaths, env: {} as NodeJS.ProcessEnv };

  it('libvirt renders domain type kvm, emulation renders qemu', async () => {
    const kvm = (await launcherDriverFactories.libvirt(ctx)) as LibvirtDriver;
    const tcg = (await launcherDriverFactories.emulation(ctx)) as LibvirtDriver;
    try {
      expect((await kvm.probe()).kvmUsable).toBe(true);
      const k = await kvm.render(vmi, { useEmulation: false });
      expect(k.virtType).toBe('kvm');
      expect(k.domain.type).toBe('kvm');
      const q = await tcg.render(vmi, { useEmulation: true });
      expect(q.virtType).toBe('qemu');
      expect(q.domain.type).toBe('qemu');
    } finally {
      await kvm.close();
      await tcg.close();
    }
  });
});
