/**
 * `virtctl memory-dump` in local mode (`kubevirt-ts up`), on the project's CSI driver
 * in-process, with a real guest: `memory-dump get VM --claim-name --create-claim` (the
 * built CLI, through local mode's API and virt-api's own handler) creates a claim naming
 * no class, sized as upstream sizes it; local mode gives it the default class, the VM
 * controller adds the `memoryDump` volume, the attachment pod (an idle local process)
 * publishes the claim, the in-process virt-handler mounts its directory into the launcher
 * pod and the launcher's libvirt writes a memory-only ELF core. Asserted: the request goes
 * Completed with upstream's file name, the claim is annotated with it, the file on the
 * pool volume is an ELF core (ET_CORE) of about the guest's RAM, the volume and its
 * attachment pod go; `memory-dump remove` dissociates the claim; `download` is refused
 * with the reason (local mode runs no export); the guest keeps running (one boot).
 */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualMachine, VirtualMachineInstance } from '../../src/api/generated/types';
import { LOCAL_CLASS } from '../../src/controllers/common/csi-objects';
import { localCsiProblem } from '../../src/controllers/composition/local-csi/local-csi';
import { loopDevicesOf } from '../../src/controllers/csi-driver/loop-devices';
import {
  PersistentVolumeClaimType,
  PersistentVolumeType,
  PodType,
  VirtualMachineInstanceType,
  VirtualMachineType,
} from '../../src/controllers/runtime/resources';
import type { KubeObject } from '../../src/controllers/runtime/types';
import { type LocalStorageFixture, NS, startLocalStorage } from './local-storage-fixture';
import { e2eRun, waitFor } from './node-harness';
import { virtctl } from './virtctl-run';

const run = e2eRun('memory dump in local mode', () => localCsiProblem());
const name = `mdl-${process.pid}`;
const CLAIM = `${name}-dump`;
const GUEST_MIB = 128;

type Vm = VirtualMachine & KubeObject;
interface Claim extends KubeObject {
  spec?: { volumeName?: string; storageClassName?: string };
}

describe.runIf(run)('virtctl memory-dump in local mode (CSI pool in-process)', () => {
  let f: LocalStorageFixture;
  let work: string;
  beforeAll(async () => {
    work = mkdtempSync(join(tmpdir(), 'kvts-mdl-out-'));
    f = await startLocalStorage('kvts-mdl-');
  }, 60_000);
  afterAll(async () => {
    await f?.node.store.delete(PersistentVolumeClaimType, CLAIM, { namespace: NS }).catch(() => undefined);
    await f?.stop([name]);
    rmSync(work, { recursive: true, force: true });
  }, 180_000);

  const vm = () => f.node.store.get<Vm>(VirtualMachineType, name, NS);
  const cli = (...args: string[]) => virtctl(['memory-dump', ...args, '--state-dir', f.state, '-n', NS]);

  it('dumps the running guest into a new claim, then dissociates it; the guest runs on', {
    timeout: 600_000,
  }, async () => {
    await f.node.store.create(VirtualMachineType, f.dvVm(name));
    await f.succeeded(`${name}-root`);
    expect(await f.onConsole(name, (con) => con.run('echo md-$((6*7))'))).toContain('md-42');

    const t0 = performance.now();
    const got = await cli('get', name, '--claim-name', CLAIM, '--create-claim');
    process.stdout.write(got.out);
    expect(got.code).toBe(0);
    expect(got.out).toContain(`Successfully submitted memory dump request of VM ${name}`);
    const done = await waitFor(
      'the memory dump request Completed',
      async () => {
        const r = (await vm()).status?.memoryDumpRequest;
        if (r?.phase === 'Failed') throw new Error(`memory dump failed: ${r.message}`);
        return r?.phase === 'Completed' ? r : undefined;
      },
      300_000,
    );
    const dumpMs = performance.now() - t0;
    expect(done.claimName).toBe(CLAIM);
    expect(done.fileName).toMatch(new RegExp(`^${name}-${CLAIM}-\\d{8}-\\d{6}\\.memory\\.dump$`));
    // The claim named no class: local mode gave it the default one, as the PV controller does.
    const claim = await f.node.store.get<Claim>(PersistentVolumeClaimType, CLAIM, NS);
    expect(claim.spec?.storageClassName).toBe(LOCAL_CLASS);
    expect(claim.metadata?.annotations?.['kubevirt.io/memory-dump']).toBe(done.fileName);

    // The volume leaves the VMI and its attachment pod goes.
    await waitFor(
      'the memory dump volume and its attachment pod gone',
      async () => {
        const vmi = await f.node.store.get<VirtualMachineInstance & KubeObject>(
          VirtualMachineInstanceType,
          name,
          NS,
        );
        const pods = (await f.node.store.list<KubeObject>(PodType, { namespace: NS })).items;
        return !vmi.spec.volumes?.some((v) => v.memoryDump) &&
          !pods.some((p) => p.metadata?.name?.startsWith('hp-volume-'))
          ? true
          : undefined;
      },
      120_000,
    );

    // The file on the pool volume (ext4, read with debugfs) is an ELF core of about the guest's RAM.
    const pv = await f.node.store.get<KubeObject & { spec?: { csi?: { volumeHandle?: string } } }>(
      PersistentVolumeType,
      claim.spec?.volumeName ?? '',
    );
    const volume = f.volumeFile(pv.spec?.csi?.volumeHandle ?? '');
    // Read once nothing holds the filesystem (its attachment pod gone, the claim unstaged).
    await waitFor('the claim unstaged', async () => (await loopDevicesOf(volume)).length === 0, 60_000);
    const out = join(work, 'dump');
    const listing = execFileSync('debugfs', ['-R', 'ls -l /', volume], { encoding: 'utf8' });
    expect(listing).toContain(done.fileName);
    execFileSync('debugfs', ['-R', `dump /${done.fileName} ${out}`, volume]);
    const core = readFileSync(out);
    expect(core.subarray(0, 4).toString('latin1')).toBe('\x7fELF');
    expect(core.readUInt16LE(16)).toBe(4); // e_type ET_CORE
    expect(core.length).toBeGreaterThan((GUEST_MIB - 16) * 1024 * 1024);
    expect(core.length).toBeLessThan((GUEST_MIB + 64) * 1024 * 1024);
    process.stdout.write(
      `memory dump of a ${GUEST_MIB} MiB guest in local mode: virtctl get to Completed in ${dumpMs.toFixed(0)} ms, ${done.fileName} ${core.length} bytes\n`,
    );

    const download = await cli('download', name, '--output', join(work, 'x.gz'));
    expect(download.code).not.toBe(0);
    expect(download.out).toContain('local mode runs no VirtualMachineExport');

    const removed = await cli('remove', name);
    expect(removed.code).toBe(0);
    expect(removed.out).toContain(`Successfully submitted remove memory dump association of VM ${name}`);
    await waitFor(
      'the request gone from the VM',
      async () => ((await vm()).status?.memoryDumpRequest ? undefined : true),
      120_000,
    );
    expect((await f.node.store.get<Claim>(PersistentVolumeClaimType, CLAIM, NS)).metadata?.name).toBe(CLAIM);

    // The guest ran on throughout: its shell still answers, and it booted once.
    expect(await f.onConsole(name, (con) => con.run('echo md-$((6*8))'))).toContain('md-48');
    await f.node.store.delete(VirtualMachineType, name, { namespace: NS });
    await f.node.store.delete(PersistentVolumeClaimType, CLAIM, { namespace: NS });
    await f.nothingLeft();
  });
});
