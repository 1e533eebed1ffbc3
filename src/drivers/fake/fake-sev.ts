/**
 * SEV attestation on a fake host that reports SEV: deterministic platform data, a
 * measurement derived from the domain, and secret injection into a paused SEV guest,
 * with the same refusals libvirt gives (no SEV guest, not paused, bad base64).
 */
import { createHash } from 'node:crypto';
import { type DomainRef, domainName, type SevSupport } from '../driver';
import { DriverError } from '../errors';
import type { FakeHost } from './fake-host';

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

function requireBase64(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.length === 0 || !BASE64.test(value)) {
    throw new DriverError('Invalid', `${field}: must be a non-empty base64 string`);
  }
  return value;
}

/** SEV support over `host`; `enter` applies the driver's latency. */
export function fakeSevSupport(host: FakeHost, enter: () => Promise<void>): SevSupport {
  const sevDomain = (ref: DomainRef) => {
    const name = domainName(ref);
    const dom = host.domains.get(name);
    if (!dom) {
      throw new DriverError(
        'NotFound',
        `VirtualMachineInstance ${ref.namespace}/${ref.name}: no domain ${name} on this host`,
      );
    }
    if (!dom.vmi.spec?.domain?.launchSecurity?.sev) {
      throw new DriverError('InvalidState', `domain ${name}: is not an SEV guest (no launchSecurity.sev)`);
    }
    if (dom.info.state === 'shutoff' || dom.info.state === 'crashed') {
      throw new DriverError('InvalidState', `domain ${name}: is not running`);
    }
    return dom;
  };
  return {
    async platformInfo() {
      await enter();
      const caps = host.capabilities.sev;
      return {
        pdh: Buffer.from('fake-platform-diffie-hellman-key').toString('base64'),
        certChain: Buffer.from('fake-sev-certificate-chain').toString('base64'),
        cbitpos: caps?.cbitpos,
        reducedPhysBits: caps?.reducedPhysBits,
        maxGuests: caps?.maxGuests,
        maxEsGuests: caps?.maxEsGuests,
      };
    },
    async launchMeasurement(ref) {
      await enter();
      const dom = sevDomain(ref);
      const measurement = createHash('sha256').update(`${dom.info.name}/${dom.info.uuid}`).digest('base64');
      return { measurement, apiMajor: 1, apiMinor: 51, buildId: 3, policy: 1 };
    },
    async injectLaunchSecret(ref, secret) {
      await enter();
      const header = requireBase64(secret.header, 'sev secret header');
      const payload = requireBase64(secret.secret, 'sev secret');
      const dom = sevDomain(ref);
      if (dom.info.state !== 'paused') {
        throw new DriverError(
          'InvalidState',
          `domain ${dom.info.name}: a launch secret can only be injected while the guest is paused (it is ${dom.info.state})`,
        );
      }
      dom.sevSecret = { header, secret: payload, address: secret.address };
    },
  };
}
