/**
 * A real boot through the launcher: the tiny test guest (direct kernel boot from the
 * local image store) converted by the converter, run by the libvirt driver under software
 * emulation on qemu:///system, its boot marker read from the launcher's console socket;
 * then an ACPI shutdown through the launcher and the domain forgotten on delete.
 */
import { spawnSync } from 'node:child_process';
import { chmodSync, mkdirSync, mkdtempSync, rmSync, symlinkSync } from 'node:fs';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CONSOLE_SOCKET,
  type LauncherDomain,
  VNC_SOCKET,
} from '../../../src/controllers/launcher/domain-report';
import { launcherDriverFactories } from '../../../src/controllers/launcher/drivers';
import { imageDir } from '../../../src/controllers/launcher/image-dirs';
import { VirtLauncher } from '../../../src/controllers/launcher/launcher';
import { launcherConverterPaths } from '../../../src/controllers/launcher/launcher-paths';
import { PathMap } from '../../../src/controllers/launcher/path-map';
import { LauncherClient } from '../../../src/controllers/launcher-protocol';
import { parseLauncherArgs } from '../../../src/controllers/services/launcher-args';
import {
  available,
  BOOT_MARKER,
  guestDir,
  POWEROFF_MARKER,
  SerialConsole,
  unavailableReason,
} from '../../support/guest';
import { integration } from '../../support/integration';
import { tinyGuestLauncherVmi as tinyGuestVmi } from './tiny-guest-vmi';

const URI = 'qemu:///system';
const libvirtAnswers = () => spawnSync('virsh', ['-c', URI, 'version'], { stdio: 'ignore' }).status === 0;
const run = integration(
  'launcher real guest',
  available() && libvirtAnswers(),
  available() ? `libvirtd does not answer on ${URI}` : unavailableReason,
);

describe.runIf(run)('virt-launcher boots the tiny guest under emulation', () => {
  const ns = 'kvts-e2e';
  const name = `launcher-${process.pid}`;
  const uid = `uid-launcher-${process.pid}`;
  let root = '';
  let launcher: VirtLauncher;
  let client: LauncherClient;
  let console_: SerialConsole;

  beforeAll(async () => {
    root = mkdtempSync(join(tmpdir(), 'kvts-launcher-guest-'));
    chmodSync(root, 0o755);
    const images = join(root, 'images');
    mkdirSync(images, { mode: 0o755 });
    symlinkSync(guestDir, imageDir(images, 'kubevirt-ts/tiny-guest'));
    const priv = join(root, 'private');
    const sockets = join(root, 'sockets');
    mkdirSync(priv, { mode: 0o755 });
    mkdirSync(sockets, { mode: 0o700 });
    const args = parseLauncherArgs([
      '--namespace',
      ns,
      '--name',
      name,
      '--uid',
      uid,
      '--grace-period-seconds',
      '45',
      '--hypervisor',
      'emulation',
      '--allow-emulation',
    ]);
    const paths = launcherConverterPaths(args, new PathMap({ '/var/run/kubevirt-private': priv }));
    launcher = new VirtLauncher({
      namespace: ns,
      name,
      uid,
      gracePeriodSeconds: 45,
      socketDir: sockets,
      connectDriver: () =>
        launcherDriverFactories.emulation({
          paths,
          imageRoot: images,
          env: { KUBEVIRT_TS_LIBVIRT_URI: URI },
        }),
      syncOptions: { useEmulation: true },
      log: () => {},
    });
    await launcher.start();
    client = new LauncherClient(join(sockets, 'launcher-sock'), { timeoutMs: 60_000 });
    await client.syncVirtualMachine(tinyGuestVmi(ns, name, uid));
    console_ = await SerialConsole.connect(join(sockets, CONSOLE_SOCKET));
  }, 120_000);

  afterAll(async () => {
    console_?.close();
    client?.close();
    await launcher?.exit(0);
    spawnSync('virsh', ['-c', URI, 'destroy', `${ns}_${name}`], { stdio: 'ignore' });
    spawnSync('virsh', ['-c', URI, 'undefine', `${ns}_${name}`], { stdio: 'ignore' });
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it('runs the domain as type qemu and prints the boot marker on the console socket', async () => {
    const d = (await client.getDomain()) as LauncherDomain;
    expect(d).toMatchObject({ name: `${ns}_${name}`, state: 'running', console: CONSOLE_SOCKET });
    const xml = spawnSync('virsh', ['-c', URI, 'dumpxml', `${ns}_${name}`], { encoding: 'utf8' }).stdout;
    expect(xml).toMatch(/<domain type='qemu'/);
    expect(xml).toContain(`${root}/private/`);
    await console_.waitFor(BOOT_MARKER, 120_000);
  }, 130_000);

  it("relays QEMU's VNC server on the pod's vnc socket (the default graphics device): an RFB 3.8 handshake", async () => {
    for (let i = 0; i < 300 && !((await client.getDomain()) as LauncherDomain).vnc; i++) {
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(((await client.getDomain()) as LauncherDomain).vnc).toBe(VNC_SOCKET);
    const xml = spawnSync('virsh', ['-c', URI, 'dumpxml', `${ns}_${name}`], { encoding: 'utf8' }).stdout;
    expect(xml).toMatch(/<graphics type='vnc' socket='[^']+'/);
    const banner = await new Promise<string>((resolve, reject) => {
      const s = connect(join(root, 'sockets', VNC_SOCKET));
      let got = Buffer.alloc(0);
      s.on('data', (d) => {
        got = Buffer.concat([got, d]);
        if (got.length >= 12) {
          s.destroy();
          resolve(got.subarray(0, 12).toString('latin1'));
        }
      });
      s.on('error', reject);
    });
    expect(banner).toBe('RFB 003.008\n');
  }, 60_000);

  it('powers the guest off with an ACPI shutdown and forgets it on delete', async () => {
    await client.shutdownVirtualMachine(tinyGuestVmi(ns, name, uid), 60);
    await console_.waitFor(POWEROFF_MARKER, 60_000);
    for (let i = 0; i < 600; i++) {
      const d = (await client.getDomain()) as LauncherDomain;
      if (d.finished) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect((await client.getDomain()) as LauncherDomain).toMatchObject({ state: 'shutoff', finished: true });
    expect(console_.output.split(BOOT_MARKER).length - 1).toBe(1);
    await client.deleteVirtualMachine(tinyGuestVmi(ns, name, uid));
    expect(await launcher.exited).toBe(0);
    expect(spawnSync('virsh', ['-c', URI, 'domstate', `${ns}_${name}`]).status).not.toBe(0);
  }, 90_000);
});
