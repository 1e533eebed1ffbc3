/**
 * A real boot of a containerDisk through the launcher as it is composed for a pod: the
 * tiny guest's bootable disk (boot.qcow2) imported into a local image store as
 * `<image>/disk/boot.qcow2`, the launcher creating its qcow2 overlay and the cloud-init
 * ISO before defining the domain, SeaBIOS booting the overlay under software emulation,
 * the boot marker read from the launcher's console socket.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, rmSync, symlinkSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../src/api/generated/types';
import {
  createLauncherContainer,
  LauncherTokens,
} from '../../../src/controllers/composition/launcher-container';
import { LauncherClient } from '../../../src/controllers/launcher-protocol';
import type { LauncherDomain } from '../../../src/controllers/launcher-protocol/domain-report';
import { CONSOLE_SOCKET } from '../../../src/controllers/launcher-protocol/paths';
import { imageDir } from '../../../src/controllers/virt-launcher/image-dirs';
import type { VirtLauncher } from '../../../src/controllers/virt-launcher/launcher';
import { BOOT_MARKER, bootDiskPath, SerialConsole } from '../../support/guest';
import { integration } from '../../support/integration';
import {
  emulationLauncherArgs,
  forgetDomain,
  makeLauncherRoot,
  realLauncherBlocker,
  SYSTEM_URI as URI,
} from './real-launcher';
import { defaultedLauncherVmi } from './tiny-guest-vmi';

const blocker = realLauncherBlocker();
const run = integration('launcher containerDisk boot', !blocker, blocker ?? '');

const IMAGE = 'kubevirt-ts/tiny-boot:1';

function bootVmi(namespace: string, name: string, uid: string): VirtualMachineInstance {
  return defaultedLauncherVmi(namespace, name, uid, {
    domain: {
      devices: {
        autoattachPodInterface: false,
        disks: [
          { name: 'root', disk: { bus: 'virtio' }, bootOrder: 1 },
          { name: 'cloudinit', disk: { bus: 'virtio' } },
        ],
      },
      resources: { requests: { memory: '128Mi' } },
    },
    volumes: [
      { name: 'root', containerDisk: { image: IMAGE } },
      { name: 'cloudinit', cloudInitNoCloud: { userData: '#cloud-config\n' } },
    ],
    terminationGracePeriodSeconds: 30,
  });
}

describe.runIf(run)('virt-launcher boots a containerDisk from the local image store', () => {
  const ns = 'kvts-e2e';
  const name = `cdisk-${process.pid}`;
  const uid = `uid-cdisk-${process.pid}`;
  let root = '';
  let launcher: VirtLauncher;
  let client: LauncherClient;
  let console_: SerialConsole;

  beforeAll(async () => {
    root = makeLauncherRoot('kvts-cdisk-');
    const images = join(root, 'images');
    const disk = join(imageDir(images, IMAGE), 'disk');
    mkdirSync(disk, { recursive: true, mode: 0o755 });
    symlinkSync(bootDiskPath, join(disk, 'boot.qcow2'));
    const dirs = { public: join(root, 'public'), private: join(root, 'private'), eph: join(root, 'eph') };
    for (const d of Object.values(dirs)) mkdirSync(d, { mode: 0o755 });
    const args = emulationLauncherArgs({ ns, name, uid, gracePeriodSeconds: 30, allowEmulation: true });
    const container = createLauncherContainer({
      args,
      env: {
        KUBEVIRT_TS_LIBVIRT_URI: URI,
        KUBEVIRT_TS_IMAGE_ROOT: images,
        KUBEVIRT_TS_MOUNTS: JSON.stringify({
          '/var/run/kubevirt': dirs.public,
          '/var/run/kubevirt-private': dirs.private,
          '/var/run/kubevirt-ephemeral-disks': dirs.eph,
        }),
      },
    });
    launcher = container.get<VirtLauncher>(LauncherTokens.launcher);
    await launcher.start();
    client = new LauncherClient(join(dirs.public, 'sockets', 'launcher-sock'), { timeoutMs: 60_000 });
    await client.syncVirtualMachine(bootVmi(ns, name, uid));
    console_ = await SerialConsole.connect(join(dirs.public, 'sockets', CONSOLE_SOCKET));
  }, 120_000);

  afterAll(async () => {
    console_?.close();
    client?.close();
    await launcher?.exit(0);
    forgetDomain(`${ns}_${name}`);
    if (root) rmSync(root, { recursive: true, force: true });
  });

  it('creates the overlay on the image disk and boots it to the marker', async () => {
    const overlay = join(root, 'eph', 'disk-data', 'root', 'disk.qcow2');
    const info = JSON.parse(
      execFileSync('qemu-img', ['info', '-U', '--output=json', overlay], { encoding: 'utf8' }),
    );
    expect(info['backing-filename']).toBe(join(root, 'public', 'container-disks', 'disk_0.img'));
    expect(info['backing-filename-format']).toBe('qcow2');
    expect(existsSync(join(root, 'eph', 'cloud-init-data', ns, name, 'noCloud.iso'))).toBe(true);
    const xml = spawnSync('virsh', ['-c', URI, 'dumpxml', `${ns}_${name}`], { encoding: 'utf8' }).stdout;
    expect(xml).toContain(`<source file='${overlay}'`);
    expect(xml).toMatch(/<backingStore type='file'[^>]*>\s*<format type='qcow2'\/>/);
    const d = (await client.getDomain()) as LauncherDomain;
    expect(d).toMatchObject({ state: 'running', console: CONSOLE_SOCKET });
    await console_.waitFor(BOOT_MARKER, 150_000);
  }, 160_000);
});
