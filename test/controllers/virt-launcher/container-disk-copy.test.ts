/**
 * A kubelet node's containerDisk path, both halves for real: the volume container's copy
 * script under the host's busybox (what the launcher image ships), and the launcher's
 * VolumePreparer waiting for its outcome and making the qcow2 overlay on the copy.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readFileSync,
  renameSync,
  rmSync,
  symlinkSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../src/api';
import { containerDiskCopyScript } from '../../../src/controllers/virt-controller/services/container-disk-containers';
import { removeContainerDiskCopies } from '../../../src/controllers/virt-launcher/container-disk-cleanup';
import { VolumePreparer } from '../../../src/controllers/virt-launcher/volume-prep';
import { type ConverterPaths, upstreamPaths } from '../../../src/converter';
import { integration } from '../../support/integration';
import { imageToolsRun } from './image-tools';

const BUSYBOX = ['/usr/bin/busybox', '/bin/busybox'].find((p) => existsSync(p));
// What the launcher image ships (scripts/images); setup-host.sh installs it on the host.
const busybox = integration('busybox', BUSYBOX !== undefined, 'install busybox-static');
const run = imageToolsRun();

async function until(cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

function vmi(): VirtualMachineInstance {
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachineInstance',
    metadata: { name: 'vm1', namespace: 'ns1', uid: 'u1' },
    spec: { domain: { devices: {} }, volumes: [{ name: 'boot', containerDisk: { image: 'reg/disk:1' } }] },
  } as VirtualMachineInstance;
}

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'kvts-cdcopy-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe.skipIf(!busybox)('the volume container copy script (busybox sh)', () => {
  let child: ChildProcess | undefined;
  afterEach(() => {
    child?.kill('SIGKILL');
    child = undefined;
  });
  const start = (...args: string[]) => {
    child = spawn(BUSYBOX!, ['sh', '-c', containerDiskCopyScript(BUSYBOX), ...args], { stdio: 'ignore' });
    return child;
  };

  it('copies the named file into place with a rename, then keeps running', async () => {
    const src = join(dir, 'src.img');
    writeFileSync(src, Buffer.alloc(256 * 1024, 7));
    const dest = join(dir, 'disk_0.img');
    const c = start(dest, src);
    await until(() => existsSync(dest));
    expect(readFileSync(dest).equals(readFileSync(src))).toBe(true);
    expect(existsSync(`${dest}.tmp`)).toBe(false);
    expect(existsSync(`${dest}.error`)).toBe(false);
    await new Promise((r) => setTimeout(r, 200));
    expect(c.exitCode).toBeNull(); // waiting: the pod's container stays running
    // The launcher's exit removes the copy: the container ends, status 0 (the pod completes).
    const exited = new Promise<number | null>((r) => c.once('exit', (code) => r(code)));
    expect(await removeContainerDiskCopies(dir)).toEqual(['disk_0.img']);
    expect(await exited).toBe(0);
    expect(existsSync(dest)).toBe(false);
  });

  it('leaves the reason in <dest>.error when the path is not a file, and keeps running', async () => {
    const dest = join(dir, 'disk_1.img');
    const c = start(dest, join(dir, 'missing.img'));
    await until(() => existsSync(`${dest}.error`));
    expect(readFileSync(`${dest}.error`, 'utf8').trim()).toBe(
      `path ${join(dir, 'missing.img')} is not a file in the image`,
    );
    expect(existsSync(dest)).toBe(false);
    await new Promise((r) => setTimeout(r, 200));
    expect(c.exitCode).toBeNull();
    const exited = new Promise<number | null>((r) => c.once('exit', (code) => r(code)));
    expect(await removeContainerDiskCopies(dir)).toEqual(['disk_1.img.error']);
    expect(await exited).toBe(0);
  });

  it('the cleanup leaves symlinks (local mode) and other files alone', async () => {
    const d = mkdtempSync(join(dir, 'links-'));
    writeFileSync(join(d, 'target'), 'x');
    symlinkSync(join(d, 'target'), join(d, 'disk_0.img'));
    writeFileSync(join(d, 'disk_0.img.tmp'), 'partial');
    expect(await removeContainerDiskCopies(d)).toEqual([]);
    expect(existsSync(join(d, 'disk_0.img'))).toBe(true);
    expect(await removeContainerDiskCopies(join(d, 'missing'))).toEqual([]);
  });
});

describe.skipIf(!run)('VolumePreparer on a kubelet node (no image store)', () => {
  let paths: ConverterPaths;
  beforeAll(() => {
    paths = { ...upstreamPaths };
    for (const k of Object.keys(paths) as Array<keyof ConverterPaths>) paths[k] = join(dir, 'pod', k);
    mkdirSync(paths.containerDiskDir, { recursive: true });
  });
  afterEach(() => rmSync(join(dir, 'pod'), { recursive: true, force: true }));
  const backing = () => join(paths.containerDiskDir, 'disk_0.img');

  it('waits for the copy, then makes the overlay on it', async () => {
    mkdirSync(paths.containerDiskDir, { recursive: true });
    const prep = new VolumePreparer({ paths }).prepare(vmi());
    // The copy lands while prepare waits, by a rename as the script does it.
    await new Promise((r) => setTimeout(r, 300));
    execFileSync('qemu-img', ['create', '-q', '-f', 'qcow2', `${backing()}.tmp`, '16M']);
    renameSync(`${backing()}.tmp`, backing());
    const done = await prep;
    const overlay = join(paths.ephemeralDiskDir, 'boot', 'disk.qcow2');
    expect(done.created).toEqual([overlay]);
    const info = JSON.parse(
      execFileSync('qemu-img', ['info', '--output=json', overlay], { encoding: 'utf8' }),
    );
    expect(info['backing-filename']).toBe(backing());
    expect(info['backing-filename-format']).toBe('qcow2');
  });

  it("reports the copier's error under the volume's field path", async () => {
    mkdirSync(paths.containerDiskDir, { recursive: true });
    writeFileSync(
      `${backing()}.error`,
      'the image must hold exactly one file under /disk/ (found: /disk/*); or set path\n',
    );
    await expect(new VolumePreparer({ paths }).prepare(vmi())).rejects.toThrow(
      "VirtualMachineInstance ns1/vm1: spec.volumes[0].containerDisk.image: the pod's volumeboot container could not copy the disk: the image must hold exactly one file under /disk/ (found: /disk/*); or set path",
    );
  });

  it('gives up after its bound while the copy is still running', async () => {
    mkdirSync(paths.containerDiskDir, { recursive: true });
    await expect(new VolumePreparer({ paths, containerDiskWaitMs: 100 }).prepare(vmi())).rejects.toThrow(
      `spec.volumes[0].containerDisk.image: the pod's volumeboot container has not finished copying the disk to ${backing()} yet`,
    );
  });
});
