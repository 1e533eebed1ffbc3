/**
 * The launcher's SEV attestation RPCs over its real unix-socket gRPC server, on the fake
 * driver: upstream's message shapes (SEVPlatformInfo, SEVMeasurementInfo JSON), secret
 * injection only into a paused SEV guest, bad options refused naming the field, and a
 * driver without SEV answered with UNIMPLEMENTED naming the VMI.
 */
import { createHash } from 'node:crypto';
import { status } from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../src/api';
import type { LauncherClient } from '../../../src/controllers/launcher-protocol';
import { defaultFakeCapabilities, FakeHost } from '../../../src/drivers';
import { type FakeLauncher, startFakeLauncher } from './fake-launcher';
import { failure } from './rpc-failure';

const vmi: VirtualMachineInstance = {
  apiVersion: 'kubevirt.io/v1',
  kind: 'VirtualMachineInstance',
  metadata: { name: 'conf1', namespace: 'ns1', uid: 'uid-sev' },
  spec: {
    domain: { devices: {}, launchSecurity: { sev: {} }, resources: { requests: { memory: '64Mi' } } },
  },
};

const sevHost = () =>
  new FakeHost({
    sev: {
      sev: true,
      sevEs: true,
      sevSnp: false,
      cbitpos: 47,
      reducedPhysBits: 1,
      maxGuests: 15,
      maxEsGuests: 494,
    },
  });

describe('launcher SEV RPCs', () => {
  let fake: FakeLauncher | undefined;
  let client: LauncherClient;

  async function start(host: FakeHost): Promise<void> {
    fake = await startFakeLauncher({
      name: 'conf1',
      uid: 'uid-sev',
      host,
      dirPrefix: 'kvts-sev-',
      launcher: { finalWaitMs: 60_000 },
    });
    client = fake.client;
  }

  afterEach(async () => {
    await fake?.close();
    fake = undefined;
  });

  it('GetSEVInfo answers upstream SEVPlatformInfo JSON (pdh, certChain)', async () => {
    await start(sevHost());
    const info = JSON.parse(Buffer.from(await client.getSevInfo()).toString('utf8'));
    expect(info).toEqual({
      pdh: Buffer.from('fake-platform-diffie-hellman-key').toString('base64'),
      certChain: Buffer.from('fake-sev-certificate-chain').toString('base64'),
    });
  });

  it('GetLaunchMeasurement answers upstream SEVMeasurementInfo JSON for the SEV guest', async () => {
    const host = sevHost();
    await start(host);
    await client.syncVirtualMachine(vmi);
    await client.pauseVirtualMachine(vmi);
    const m = JSON.parse(Buffer.from(await client.getLaunchMeasurement(vmi)).toString('utf8'));
    const uuid = host.domains.get('ns1_conf1')?.info.uuid;
    expect(m).toEqual({
      measurement: createHash('sha256').update(`ns1_conf1/${uuid}`).digest('base64'),
      apiMajor: 1,
      apiMinor: 51,
      buildID: 3,
      policy: 1,
    });
  });

  it('InjectLaunchSecret reaches a paused guest with header, secret and address; a running one is refused', async () => {
    const host = sevHost();
    await start(host);
    await client.syncVirtualMachine(vmi);
    const running = await failure(client.injectLaunchSecret(vmi, { header: 'aGVhZA==', secret: 'c2VjcmV0' }));
    expect(running.code).toBe(status.FAILED_PRECONDITION);
    expect(running.message).toBe(
      'InjectLaunchSecret: VirtualMachineInstance ns1/conf1: failed to inject SEV launch secret: domain ns1_conf1: a launch secret can only be injected while the guest is paused (it is running)',
    );
    await client.pauseVirtualMachine(vmi);
    await client.injectLaunchSecret(vmi, { header: 'aGVhZA==', secret: 'c2VjcmV0', address: '0x8000' });
    expect(host.domains.get('ns1_conf1')?.sevSecret).toEqual({
      header: 'aGVhZA==',
      secret: 'c2VjcmV0',
      address: 0x8000n,
    });
  });

  it('InjectLaunchSecret refuses bad options naming the field', async () => {
    await start(sevHost());
    await client.syncVirtualMachine(vmi);
    const noHeader = await failure(client.injectLaunchSecret(vmi, { secret: 'c2VjcmV0' }));
    expect(noHeader.code).toBe(status.INVALID_ARGUMENT);
    expect(noHeader.message).toBe(
      'InjectLaunchSecret: VirtualMachineInstance ns1/conf1: InjectLaunchSecret options.header: must be a non-empty base64 string',
    );
    const badAddress = await failure(
      client.injectLaunchSecret(vmi, { header: 'aGVhZA==', secret: 'c2VjcmV0', address: -1 }),
    );
    expect(badAddress.message).toContain('options.address: must be a non-negative integer');
    await client.pauseVirtualMachine(vmi);
    const notBase64 = await failure(
      client.injectLaunchSecret(vmi, { header: 'not base64!', secret: 'c2VjcmV0' }),
    );
    expect(notBase64.code).toBe(status.INVALID_ARGUMENT);
    expect(notBase64.message).toContain('sev secret header: must be a non-empty base64 string');
  });

  it('GetLaunchMeasurement of a guest that is not an SEV guest is FAILED_PRECONDITION', async () => {
    await start(sevHost());
    const plain = structuredClone(vmi);
    delete plain.spec.domain.launchSecurity;
    await client.syncVirtualMachine(plain);
    const err = await failure(client.getLaunchMeasurement(plain));
    expect(err.code).toBe(status.FAILED_PRECONDITION);
    expect(err.message).toBe(
      'GetLaunchMeasurement: VirtualMachineInstance ns1/conf1: failed to get launch measurement: domain ns1_conf1: is not an SEV guest (no launchSecurity.sev)',
    );
  });

  it('a driver without SEV answers all three RPCs with UNIMPLEMENTED naming the VMI', async () => {
    await start(new FakeHost(defaultFakeCapabilities()));
    const want =
      'VirtualMachineInstance ns1/conf1: SEV attestation is not available: the fake driver has no SEV support';
    for (const [rpc, call] of [
      ['GetSEVInfo', () => client.getSevInfo()],
      ['GetLaunchMeasurement', () => client.getLaunchMeasurement(vmi)],
      ['InjectLaunchSecret', () => client.injectLaunchSecret(vmi, { header: 'aA==', secret: 'aA==' })],
    ] as const) {
      const err = await failure(call());
      expect(err.code).toBe(status.UNIMPLEMENTED);
      expect(err.message).toBe(`${rpc}: ${want}`);
    }
  });
});
