/**
 * Values libvirt or QEMU refuse, and names the cluster cannot resolve, are field errors at
 * admission (they were admitted and failed only when the VMI started, or never): timer tick
 * policies and rtc track, video models per architecture, the spinlocks retries and the
 * supplemental iothread count (uint32 as upstream's types), Multus network names, pod
 * network ports and protocols, and binding plugin names looked up as own keys.
 */
import { describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import type { VirtualMachine, VirtualMachineInstance } from '../../../src/api/generated/types';
import { admit } from '../../../src/api/validation/admission';
import { fixture as example } from '../../support/fixtures';

const config = createClusterConfig(
  { network: { binding: { mybinding: { sidecarImage: 'example/sidecar' } } } },
  { hostArchitecture: 'amd64' },
);

function errors(mutate: (v: VirtualMachineInstance) => void): { field: string; message: string }[] {
  const vmi = example<VirtualMachineInstance>('vmi-containerdisk.yaml');
  mutate(vmi);
  return admit(vmi as never, config).errors.map((e) => ({ field: e.path, message: e.message }));
}

/** A VMI whose one interface (`net`) is on `network`. */
function withInterface(iface: Record<string, unknown>, network: Record<string, unknown> = { pod: {} }) {
  return (v: VirtualMachineInstance) => {
    v.spec.domain.devices.interfaces = [{ name: 'net', ...iface } as never];
    v.spec.networks = [{ name: 'net', ...network } as never];
  };
}

describe('values libvirt refuses are refused at admission', () => {
  it('timer tick policies and rtc track, per timer', () => {
    const base = 'spec.domain.clock.timer';
    expect(
      errors((v) => (v.spec.domain.clock = { utc: {}, timer: { rtc: { tickPolicy: 'bogus' } } })),
    ).toEqual([{ field: `${base}.rtc.tickPolicy`, message: "'bogus' is not one of delay, catchup" }]);
    expect(
      errors((v) => (v.spec.domain.clock = { utc: {}, timer: { rtc: { tickPolicy: 'merge', track: 'x' } } })),
    ).toEqual([
      { field: `${base}.rtc.tickPolicy`, message: "'merge' is not one of delay, catchup" },
      { field: `${base}.rtc.track`, message: "'x' is not one of guest, wall" },
    ]);
    expect(
      errors((v) => (v.spec.domain.clock = { utc: {}, timer: { pit: { tickPolicy: 'merge' } } })),
    ).toEqual([
      { field: `${base}.pit.tickPolicy`, message: "'merge' is not one of delay, catchup, discard" },
    ]);
    expect(
      errors(
        (v) =>
          (v.spec.domain.clock = {
            utc: {},
            timer: {
              rtc: { tickPolicy: 'catchup', track: 'guest' },
              pit: { tickPolicy: 'discard' },
              hpet: { tickPolicy: 'merge' },
            },
          }),
      ),
    ).toEqual([]);
  });

  it('video models by architecture (s390x: virtio only, as upstream)', () => {
    expect(
      errors((v) => {
        v.spec.architecture = 's390x';
        v.spec.domain.devices.video = { type: 'vga' };
      }).filter((e) => e.field.includes('video')),
    ).toEqual([
      {
        field: 'spec.domain.devices.video.type',
        message: "video model 'vga' is not supported on s390x architecture",
      },
    ]);
    expect(
      errors((v) => {
        v.spec.architecture = 'ppc64le';
        v.spec.domain.devices.video = { type: 'bogus' };
      }).filter((e) => e.field.includes('video')),
    ).toEqual([
      {
        field: 'spec.domain.devices.video.type',
        message: "video model 'bogus' is not supported on ppc64le architecture",
      },
    ]);
  });

  it("a VM template is held to its architecture's video models too (upstream checks only VMIs)", () => {
    const vm = example<VirtualMachine>('vm-containerdisk.yaml');
    vm.spec.template!.spec!.domain.devices.video = { type: 'bogus' };
    vm.spec.template!.spec!.domain.clock = { utc: {}, timer: { rtc: { tickPolicy: 'bogus' } } };
    expect(admit(vm as never, config).errors.map((e) => [e.path, e.message])).toEqual([
      ['spec.template.spec.domain.clock.timer.rtc.tickPolicy', "'bogus' is not one of delay, catchup"],
      [
        'spec.template.spec.domain.devices.video.type',
        "video model 'bogus' is not supported on amd64 architecture",
      ],
    ]);
  });

  it('spinlocks retries: at least 4095 and a uint32', () => {
    const path = 'spec.domain.features.hyperv.spinlocks.spinlocks';
    const spin = (n: number) => (v: VirtualMachineInstance) => {
      v.spec.domain.features = { hyperv: { spinlocks: { spinlocks: n } } };
    };
    expect(errors(spin(2 ** 32))).toContainEqual({
      field: path,
      message: 'must be an integer from 4095 to 4294967295, got 4294967296',
    });
    expect(errors(spin(4094)).map((e) => e.field)).toContain(path);
    expect(errors(spin(2 ** 32 - 1)).map((e) => e.field)).not.toContain(path);
    // Disabled, only the type's range applies.
    const off = (n: number) => (v: VirtualMachineInstance) => {
      v.spec.domain.features = { hyperv: { spinlocks: { enabled: false, spinlocks: n } } };
    };
    expect(errors(off(100)).map((e) => e.field)).not.toContain(path);
    expect(errors(off(2 ** 32)).map((e) => e.field)).toContain(path);
  });

  it('supplementalPoolThreadCount: a uint32', () => {
    const errs = errors((v) => {
      v.spec.domain.ioThreadsPolicy = 'supplementalPool';
      v.spec.domain.ioThreads = { supplementalPoolThreadCount: 2 ** 32 };
    });
    expect(errs).toContainEqual({
      field: 'spec.domain.ioThreads.supplementalPoolThreadCount',
      message: 'must be an integer from 1 to 4294967295, got 4294967296',
    });
  });
});

describe('networks and interfaces', () => {
  it('a Multus networkName is [namespace/]name of DNS-1123 names', () => {
    const multus = (networkName: string) => withInterface({ bridge: {} }, { multus: { networkName } });
    const field = 'spec.networks[0].multus.networkName';
    for (const bad of ['Bad_Name', 'a/b/c', '/x', 'ns/', 'UPPER/nad', '../x']) {
      expect(errors(multus(bad)).filter((e) => e.field === field)).toHaveLength(1);
    }
    expect(errors(multus('Bad_Name')).find((e) => e.field === field)?.message).toMatch(
      /^"Bad_Name" is not a \[namespace\/\]name: /,
    );
    for (const ok of ['nad', 'my-ns/nad.v1'])
      expect(errors(multus(ok)).filter((e) => e.field === field)).toEqual([]);
  });

  it('port 65536 and protocol "" are refused at admission with their field paths', () => {
    const errs = errors(
      withInterface({ masquerade: {}, ports: [{ port: 65536 }, { port: 80, protocol: '' }] }),
    );
    expect(errs).toEqual([
      {
        field: 'spec.domain.devices.interfaces[0].ports[0].port',
        message: 'Port field must be in range 0 < x < 65536.',
      },
      {
        field: 'spec.domain.devices.interfaces[0].ports[1].protocol',
        message: 'Unknown protocol, only TCP or UDP allowed',
      },
    ]);
    expect(errors(withInterface({ masquerade: {}, ports: [{ port: 65535, protocol: 'UDP' }] }))).toEqual([]);
  });

  it('binding plugin names are looked up as own keys of the KubeVirt configuration', () => {
    for (const name of ['__proto__', 'constructor', 'toString']) {
      expect(errors(withInterface({ binding: { name } }))).toContainEqual({
        field: 'spec.domain.devices.interfaces[0].binding.name',
        message: `logical net interface requests a binding plugin ${name} that is not configured in kubevirt-config`,
      });
    }
    expect(
      errors(withInterface({ binding: { name: 'mybinding' } })).filter((e) => e.field.includes('binding')),
    ).toEqual([]);
  });
});
