/** Small device configurators: tpm, vsock, channels, rng, inputs, memballoon, graphics, sound, watchdog, console, usb redirection. */
import { describe, expect, it } from 'vitest';
import {
  channelsConfigurator,
  consoleConfigurator,
  graphicsConfigurator,
  inputsConfigurator,
  memballoonConfigurator,
  rngConfigurator,
  soundConfigurator,
  tpmConfigurator,
  usbRedirectionConfigurator,
  vsockConfigurator,
  watchdogConfigurator,
} from '../../../src/converter/configurators';
import { testContext } from '../support/contexts';
import { run, vmi } from '../support/run';

const devices = (d: object) => vmi({ domain: { devices: d } });

describe('tpm configurator', () => {
  it('adds an emulated TPM 2.0, persistent when asked, and nothing when disabled', () => {
    expect(run([tpmConfigurator], devices({ tpm: {} })).devices.tpm).toEqual([
      { model: 'tpm-tis', backend: { type: 'emulator', version: '2.0' }, alias: { name: 'ua-tpm' } },
    ]);
    expect(
      run([tpmConfigurator], devices({ tpm: { persistent: true } })).devices.tpm![0].backend.persistent_state,
    ).toBe('yes');
    expect(run([tpmConfigurator], devices({ tpm: { enabled: false } })).devices.tpm).toBeUndefined();
  });
});

describe('vsock configurator', () => {
  it('uses the allocated CID, from the context or the VMI status', () => {
    expect(run([vsockConfigurator], devices({ autoattachVSOCK: true })).devices.vsock).toEqual({
      model: 'virtio-non-transitional',
      cid: { auto: 'no', address: 3 },
      alias: { name: 'ua-vsock' },
    });
    const fromStatus = { ...devices({ autoattachVSOCK: true }), status: { VSOCKCID: 42 } };
    expect(
      run([vsockConfigurator], fromStatus, testContext({ vsockCID: undefined })).devices.vsock!.cid.address,
    ).toBe(42);
    expect(() =>
      run([vsockConfigurator], devices({ autoattachVSOCK: true }), testContext({ vsockCID: undefined })),
    ).toThrow(/autoattachVSOCK: VSOCK needs a context id/);
  });

  it('stays virtio-non-transitional with useVirtioTransitional (upstream VSOCKDomainConfigurator)', () => {
    const d = run([vsockConfigurator], devices({ autoattachVSOCK: true, useVirtioTransitional: true }));
    expect(d.devices.vsock!.model).toBe('virtio-non-transitional');
  });
});

describe('channels configurator', () => {
  it('adds the guest agent channel and lets libvirt choose its socket path', () => {
    expect(run([channelsConfigurator], vmi()).devices.channel).toEqual([
      { type: 'unix', target: { type: 'virtio', name: 'org.qemu.guest_agent.0' } },
    ]);
  });
});

describe('channels configurator: downward metrics', () => {
  it("adds upstream's vhostmd virtio-serial port (convertDownwardMetricsChannel) after the agent's", () => {
    expect(run([channelsConfigurator], devices({ downwardMetrics: {} })).devices.channel).toEqual([
      { type: 'unix', target: { type: 'virtio', name: 'org.qemu.guest_agent.0' } },
      {
        type: 'unix',
        source: {
          mode: 'bind',
          path: '/var/run/kubevirt-private/downwardmetrics-channel/downwardmetrics.sock',
        },
        target: { type: 'virtio', name: 'org.github.vhostmd.1' },
      },
    ]);
  });
});

describe('rng configurator', () => {
  it('feeds a virtio RNG from /dev/urandom, transitional when the VMI asks', () => {
    expect(run([rngConfigurator], devices({ rng: {} })).devices.rng).toEqual([
      { model: 'virtio-non-transitional', backend: { model: 'random', value: '/dev/urandom' } },
    ]);
    expect(
      run([rngConfigurator], devices({ rng: {}, useVirtioTransitional: true })).devices.rng![0].model,
    ).toBe('virtio-transitional');
  });
});

describe('inputs configurator', () => {
  it('auto-attaches a USB tablet when asked and none is listed', () => {
    expect(run([inputsConfigurator], devices({ autoattachInputDevice: true })).devices.input).toEqual([
      { type: 'tablet', bus: 'usb', alias: { name: 'ua-default-0' } },
    ]);
  });

  it('adds tablets on usb by default and rejects other types', () => {
    expect(
      run([inputsConfigurator], devices({ inputs: [{ name: 'tab', type: 'tablet' }] })).devices.input,
    ).toEqual([{ type: 'tablet', bus: 'usb', alias: { name: 'ua-tab' } }]);
    expect(() => run([inputsConfigurator], devices({ inputs: [{ name: 'k', type: 'keyboard' }] }))).toThrow(
      "spec.domain.devices.inputs[0].type: 'keyboard' is not supported; only tablet",
    );
  });
});

describe('memballoon configurator', () => {
  it('attaches a virtio balloon with stats and free page reporting, off with hugepages, none on opt-out', () => {
    expect(run([memballoonConfigurator], vmi()).devices.memballoon).toEqual({
      model: 'virtio-non-transitional',
      freePageReporting: 'on',
      stats: { period: 10 },
    });
    expect(
      run(
        [memballoonConfigurator],
        vmi({ domain: { memory: { guest: '1Gi', hugepages: { pageSize: '2Mi' } } } }),
      ).devices.memballoon!.freePageReporting,
    ).toBe('off');
    expect(
      run([memballoonConfigurator], devices({ autoattachMemBalloon: false })).devices.memballoon,
    ).toEqual({ model: 'none' });
  });
});

describe('graphics configurator', () => {
  it('serves VNC on a unix socket with a vga video device on x86', () => {
    const d = run([graphicsConfigurator], vmi({}, { uid: 'u1' }));
    expect(d.devices.graphics).toEqual([
      { type: 'vnc', listen: [{ type: 'socket', socket: '/var/run/kubevirt-private/u1/virt-vnc' }] },
    ]);
    expect(d.devices.video).toEqual([{ model: { type: 'vga', heads: 1, vram: 16384 } }]);
    expect(
      run([graphicsConfigurator], devices({ autoattachGraphicsDevice: false })).devices.graphics,
    ).toBeUndefined();
  });

  it('gives EFI guests on x86 the bochs display unless the context opts out (upstream BochsDisplayForEFIGuests, GA)', () => {
    const efi = vmi({ domain: { firmware: { bootloader: { efi: {} } } } });
    expect(run([graphicsConfigurator], efi).devices.video).toEqual([{ model: { type: 'bochs', heads: 1 } }]);
    expect(
      run([graphicsConfigurator], efi, testContext({ useBochsForEFIGuests: false })).devices.video,
    ).toEqual([{ model: { type: 'vga', heads: 1, vram: 16384 } }]);
  });
});

describe('sound configurator', () => {
  it('defaults to ich9 and rejects unknown models', () => {
    expect(run([soundConfigurator], devices({ sound: { name: 'a' } })).devices.sound).toEqual([
      { model: 'ich9', alias: { name: 'ua-a' } },
    ]);
    expect(() => run([soundConfigurator], devices({ sound: { name: 'a', model: 'sb16' } }))).toThrow(
      /sound\.model: 'sb16' is not one of ich9, ac97/,
    );
  });
});

describe('watchdog configurator', () => {
  it('adds an i6300esb with its action', () => {
    expect(
      run([watchdogConfigurator], devices({ watchdog: { name: 'w', i6300esb: { action: 'shutdown' } } }))
        .devices.watchdog,
    ).toEqual([{ model: 'i6300esb', action: 'shutdown', alias: { name: 'ua-w' } }]);
    expect(() =>
      run([watchdogConfigurator], devices({ watchdog: { name: 'w', i6300esb: { action: 'explode' } } })),
    ).toThrow(/watchdog\.i6300esb\.action: 'explode'/);
  });
});

describe('console configurator', () => {
  it('binds the serial console to a unix socket, logged when asked, with a pty console', () => {
    const d = run([consoleConfigurator], {
      ...devices({ logSerialConsole: true }),
      metadata: { name: 't', uid: 'u1' },
    });
    expect(d.devices.serial).toEqual([
      {
        type: 'unix',
        source: { mode: 'bind', path: '/var/run/kubevirt-private/u1/virt-serial0' },
        target: { port: 0 },
        log: { file: '/var/run/kubevirt-private/u1/virt-serial0-log', append: 'on' },
      },
    ]);
    expect(d.devices.console).toEqual([{ type: 'pty', target: { type: 'serial', port: 0 } }]);
    expect(
      run([consoleConfigurator], devices({ autoattachSerialConsole: false })).devices.serial,
    ).toBeUndefined();
  });

  it('logs the serial console by default unless the VMI or the cluster turns it off (upstream isSerialConsoleLogEnabled)', () => {
    const log = (logSerialConsole: boolean | undefined, serialConsoleLogDisabled = false) =>
      run([consoleConfigurator], devices({ logSerialConsole }), testContext({ serialConsoleLogDisabled }))
        .devices.serial![0].log;
    expect(log(undefined)).toEqual({
      file: '/var/run/kubevirt-private/default_t/virt-serial0-log',
      append: 'on',
    });
    expect(log(false)).toBeUndefined();
    expect(log(undefined, true)).toBeUndefined();
    expect(log(true, true)).toEqual({
      file: '/var/run/kubevirt-private/default_t/virt-serial0-log',
      append: 'on',
    });
  });
});

describe('usb redirection configurator', () => {
  it('offers four usbredir sockets with clientPassthrough', () => {
    const d = run([usbRedirectionConfigurator], {
      ...devices({ clientPassthrough: {} }),
      metadata: { name: 't', uid: 'u1' },
    });
    expect(d.devices.redirdev?.map((r) => r.source?.path)).toEqual(
      [0, 1, 2, 3].map((i) => `/var/run/kubevirt-private/u1/virt-usbredir-${i}`),
    );
  });
});
