/**
 * The launcher's SEV and migration RPCs against the real system libvirtd of this host,
 * which has no SEV: the exact errors libvirt gives, mapped to gRPC statuses naming the
 * VMI. One QEMU domain (the tiny guest, started paused so no TCG boot is paid) serves
 * every assertion: its launch measurement and secret injection are refused because it
 * is not an SEV guest, and a live migration to an unreachable target daemon fails with
 * libvirt's connection error while the guest stays where it was.
 */
import { status } from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { LauncherClient } from '../../../src/controllers/launcher-protocol';
import type { LauncherDomain } from '../../../src/controllers/launcher-protocol/domain-report';
import { integration } from '../../support/integration';
import { waitFor } from '../../support/wait';
import { type RealLauncher, realLauncherBlocker, startRealLauncher } from './real-launcher';
import { failure } from './rpc-failure';
import { tinyGuestLauncherVmi as tinyGuestVmi } from './tiny-guest-vmi';

const blocker = realLauncherBlocker();
const run = integration('launcher SEV/migration against libvirtd', !blocker, blocker ?? '');

describe.runIf(run)('launcher SEV and migration RPCs on the real libvirtd (no SEV here)', () => {
  const ns = 'kvts-it';
  const name = `sevmig-${process.pid}`;
  const uid = `uid-sevmig-${process.pid}`;
  const subject = `VirtualMachineInstance ${ns}/${name}`;
  const dom = `${ns}_${name}`;
  let real: RealLauncher | undefined;
  let client: LauncherClient;
  const vmi = () => ({
    ...tinyGuestVmi(ns, name, uid),
    status: { migrationState: { migrationUid: `mig-${process.pid}` } },
  });

  beforeAll(async () => {
    real = await startRealLauncher({
      ns,
      name,
      uid,
      rootPrefix: 'kvts-sevmig-',
      gracePeriodSeconds: 5,
      // Started paused: a real QEMU process, no guest CPU time spent.
      syncOptions: { useEmulation: true, paused: true },
      migrationPollMs: 50,
    });
    client = real.client;
  }, 60_000);

  afterAll(async () => {
    await real?.close();
  });

  it('GetSEVInfo: libvirt says QEMU has no SEV; the launcher answers FAILED_PRECONDITION naming the VMI', async () => {
    const err = await failure(client.getSevInfo());
    expect(err.code).toBe(status.FAILED_PRECONDITION);
    expect(err.message).toBe(
      `GetSEVInfo: ${subject}: failed to get SEV platform info: host: fetch SEV platform info failed: Operation not supported: QEMU does not support SEV guest`,
    );
  });

  it('GetLaunchMeasurement and InjectLaunchSecret: NOT_FOUND without a domain', async () => {
    const m = await failure(client.getLaunchMeasurement(vmi()));
    expect(m.code).toBe(status.NOT_FOUND);
    expect(m.message).toBe(
      `GetLaunchMeasurement: ${subject}: failed to get launch measurement: ${subject}: no domain ${dom} on this host`,
    );
    const s = await failure(client.injectLaunchSecret(vmi(), { header: 'aGVhZA==', secret: 'c2VjcmV0' }));
    expect(s.code).toBe(status.NOT_FOUND);
  });

  it('a running non-SEV guest has no measurement and takes no secret', async () => {
    await client.syncVirtualMachine(vmi());
    expect(((await client.getDomain()) as LauncherDomain).state).toBe('paused');
    const m = await failure(client.getLaunchMeasurement(vmi()));
    expect(m.code).toBe(status.FAILED_PRECONDITION);
    expect(m.message).toBe(
      `GetLaunchMeasurement: ${subject}: failed to get launch measurement: domain ${dom}: libvirt reported no sev-measurement (is it a running SEV guest?)`,
    );
    const s = await failure(client.injectLaunchSecret(vmi(), { header: 'aGVhZA==', secret: 'c2VjcmV0' }));
    expect(s.code).toBe(status.FAILED_PRECONDITION);
    expect(s.message).toBe(
      `InjectLaunchSecret: ${subject}: failed to inject SEV launch secret: domain ${dom}: inject launch secret failed: Operation not supported: setting a launch secret is only supported in SEV-enabled domains`,
    );
  });

  it("MigrateVirtualMachine to an unreachable target daemon fails with libvirt's error; the guest stays", async () => {
    await client.migrateVirtualMachine(vmi(), {
      TargetURI: 'qemu+tcp://127.0.0.1:1/system',
      Bandwidth: '32Mi',
    });
    const d = await waitFor(
      'the migration to fail',
      async () => {
        const r = (await client.getDomain()) as LauncherDomain;
        return r.migration?.endTimestamp ? r : undefined;
      },
      30_000,
    );
    expect(d.migration).toMatchObject({
      role: 'source',
      failed: true,
      targetUri: 'qemu+tcp://127.0.0.1:1/system',
      failureReason: `Live migration failed: domain ${dom}: migrate to qemu+tcp://127.0.0.1:1/system failed: unable to connect to server at '127.0.0.1:1': Connection refused`,
    });
    expect(d.migration?.completed).toBeUndefined();
    expect(d).toMatchObject({ state: 'paused', finished: false });
    const cancel = await failure(client.cancelVirtualMachineMigration(vmi()));
    expect(cancel.message).toBe(
      `CancelVirtualMachineMigration: ${subject}: failed to cancel migration - vmi is not migrating`,
    );
  }, 60_000);
});
