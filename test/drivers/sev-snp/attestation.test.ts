/**
 * The attestation operations against a fake daemon that speaks libvirt's real RPC
 * protocol on a unix socket, through the project's libvirt client.
 */
import { createHash } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LibvirtClient, tp } from '../../../src/drivers/libvirt';
import { RemoteProc } from '../../../src/drivers/libvirt/protocol/constants';
import { DriverRegistry } from '../../../src/drivers/registry';
import { SevAttestation, sevSnpPlugin, withSevSession } from '../../../src/drivers/sev-snp';
import { FakeDriver } from '../../../src/testing';
import { FakeSevLibvirtd } from './fake-sev-libvirtd';

const dir = mkdtempSync(join(tmpdir(), 'kvts-test-drv-attest-'));
const firmware = join(dir, 'OVMF.fd');
writeFileSync(firmware, 'fake firmware image');
const ref = { namespace: 'ns', name: 'secret-vm' };
const dom = { name: 'ns_secret-vm', uuid: '3f1c2b7e-1d2a-4c4b-9a53-0c5b0c6f7a10', id: 7 };

const daemon = new FakeSevLibvirtd({
  nodeSevInfo: [
    tp.string('pdh', 'UERIIGtleQ=='),
    tp.string('cert-chain', 'Q0VSVCBDSEFJTg=='),
    tp.string('cpu0-id', 'Y3B1MA=='),
    tp.uint('cbitpos', 51),
    tp.uint('reduced-phys-bits', 1),
    tp.uint('max-guests', 502),
    tp.uint('max-es-guests', 7),
  ],
  domains: [
    {
      ref: dom,
      xml: `<domain type='kvm'><name>${dom.name}</name><os><loader readonly='yes' type='pflash'>${firmware}</loader></os></domain>`,
      launchSecurityInfo: [
        tp.string('sev-measurement', 'bWVhc3VyZW1lbnQ='),
        tp.int('sev-api-major', 1),
        tp.int('sev-api-minor', 55),
        tp.int('sev-build-id', 21),
        tp.uint('sev-policy', 5),
      ],
    },
  ],
});
let client: LibvirtClient;
let attestation: SevAttestation;

beforeAll(async () => {
  const socketPath = join(dir, 'libvirt-sock');
  await daemon.listen(socketPath);
  client = await LibvirtClient.connect({ uri: 'qemu:///system', socketPath, keepalive: false });
  attestation = new SevAttestation(client);
});

afterAll(async () => {
  await client?.close();
  await daemon.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('SEV attestation over the libvirt protocol', () => {
  it('fetches the platform certificate chain (virNodeGetSEVInfo)', async () => {
    expect(await attestation.fetchCertChain()).toEqual({
      pdh: 'UERIIGtleQ==',
      certChain: 'Q0VSVCBDSEFJTg==',
      cpu0Id: 'Y3B1MA==',
      cbitpos: 51,
      reducedPhysBits: 1,
      maxGuests: 502,
      maxEsGuests: 7,
    });
    expect(daemon.calls.some((c) => c.procedure === RemoteProc.NODE_GET_SEV_INFO)).toBe(true);
  });

  it('queries the launch measurement (virDomainGetLaunchSecurityInfo) with the firmware hash', async () => {
    const m = await attestation.queryLaunchMeasurement(ref);
    expect(m).toEqual({
      measurement: 'bWVhc3VyZW1lbnQ=',
      apiMajor: 1,
      apiMinor: 55,
      buildId: 21,
      policy: 5,
      loaderSHA: createHash('sha256').update('fake firmware image').digest('hex'),
    });
  });

  it('injects a launch secret (virDomainSetLaunchSecurityState) with the exact typed parameters', async () => {
    await attestation.injectLaunchSecret(ref, { header: 'aGVhZGVy', secret: 'c2VjcmV0', address: 0x800000n });
    const call = daemon.calls.findLast((c) => c.procedure === RemoteProc.DOMAIN_SET_LAUNCH_SECURITY_STATE);
    expect(call?.domain).toBe('ns_secret-vm');
    expect(call?.params).toEqual([
      { field: 'sev-secret-header', type: 'string', value: 'aGVhZGVy' },
      { field: 'sev-secret', type: 'string', value: 'c2VjcmV0' },
      { field: 'sev-secret-set-address', type: 'ullong', value: 0x800000n },
    ]);
  });

  it('rejects a secret that is not base64 before it reaches libvirt', async () => {
    const before = daemon.calls.length;
    await expect(
      attestation.injectLaunchSecret(ref, { header: 'not base64!', secret: 'c2VjcmV0' }),
    ).rejects.toThrow('sev secret header: must be a non-empty base64 string');
    expect(daemon.calls.length).toBe(before);
  });

  it('reports an unknown domain as NotFound, naming the VMI', async () => {
    await expect(
      attestation.queryLaunchMeasurement({ namespace: 'ns', name: 'ghost' }),
    ).rejects.toMatchObject({
      code: 'NotFound',
      message: 'VirtualMachineInstance ns/ghost: no domain ns_ghost on this host',
    });
  });

  it('runs as the plugin launcher operations through a libvirt-backed driver', async () => {
    const ops = new DriverRegistry([], [sevSnpPlugin()]).launcherOperations();
    expect([...ops.keys()].sort()).toEqual([
      'sevFetchCertChain',
      'sevInjectLaunchSecret',
      'sevQueryLaunchMeasurement',
    ]);
    const driver = Object.assign(new FakeDriver(), { libvirt: client });
    const out = await ops.get('sevQueryLaunchMeasurement')?.operation({}, { driver, ref });
    expect(out?.measurement).toBe('bWVhc3VyZW1lbnQ=');
    await expect(
      ops.get('sevFetchCertChain')?.operation({}, { driver: new FakeDriver(), ref }),
    ).rejects.toThrow('driver fake: has no SEV attestation support');
  });

  it('sets up a session on the VMI: owner keys in the spec, start paused', () => {
    const vmi = {
      metadata: { name: 'secret-vm', namespace: 'ns' },
      spec: { domain: { devices: {}, launchSecurity: { sev: {} } } },
    };
    const out = withSevSession(vmi, { dhCert: 'ZGg=', session: 'c2Vzcw==' });
    expect(out.spec?.domain.launchSecurity?.sev).toEqual({ dhCert: 'ZGg=', session: 'c2Vzcw==' });
    expect(out.spec?.startStrategy).toBe('Paused');
    expect(vmi.spec.domain.launchSecurity.sev).toEqual({});
  });
});
