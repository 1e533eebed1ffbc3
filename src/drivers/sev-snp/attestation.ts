/**
 * The SEV attestation flow, mapped to libvirt's SEV calls as upstream KubeVirt's
 * launcher does it:
 * - platform info and certificate chain: `virNodeGetSEVInfo` (`pdh`, `cert-chain`, ...);
 * - session setup: the guest owner's `dhCert` and `session` go into the VMI spec and
 *   from there into `<launchSecurity>`; the VMI starts paused (libvirt has no separate call);
 * - launch measurement: `virDomainGetLaunchSecurityInfo` (`sev-measurement`, API version,
 *   build id, policy), plus the SHA-256 of the firmware the guest was launched with;
 * - secret injection: `virDomainSetLaunchSecurityState` (`sev-secret-header`,
 *   `sev-secret`, optional `sev-secret-set-address`), before the guest is resumed.
 */
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { XMLParser } from 'fast-xml-parser';
import type { VirtualMachineInstance } from '../../api';
import {
  type DomainRef,
  domainName,
  type HypervisorDriver,
  type SevMeasurementInfo,
  type SevPlatformInfo,
  type SevSecret,
  type SevSupport,
} from '../driver';
import { DriverError, type DriverErrorCode } from '../errors';
import {
  type DomainRef as LibvirtDomain,
  LibvirtError,
  type TypedParam,
  tp,
  typedParamsToRecord,
  VIR_ERR_ARGUMENT_UNSUPPORTED,
  VIR_ERR_CONFIG_UNSUPPORTED,
  VIR_ERR_NO_DOMAIN,
  VIR_ERR_NO_SUPPORT,
  VIR_ERR_OPERATION_INVALID,
  VIR_ERR_OPERATION_UNSUPPORTED,
} from '../libvirt';
import type { LauncherOperation } from '../plugin';

/** The libvirt calls attestation needs (a `LibvirtClient` has them). */
export interface SevLibvirt {
  nodeGetSEVInfo(flags?: number): Promise<TypedParam[]>;
  domainLookupByName(name: string): Promise<LibvirtDomain>;
  domainGetLaunchSecurityInfo(dom: LibvirtDomain, flags?: number): Promise<TypedParam[]>;
  domainSetLaunchSecurityState(dom: LibvirtDomain, params: TypedParam[], flags?: number): Promise<void>;
  domainGetXMLDesc(dom: LibvirtDomain, flags?: number): Promise<string>;
}

/** libvirt's refusal on a host or domain without SEV is `Unsupported`, not a hypervisor fault. */
function errorCode(e: unknown): DriverErrorCode {
  if (!(e instanceof LibvirtError)) return 'Hypervisor';
  if (UNSUPPORTED.includes(e.code)) return 'Unsupported';
  if (e.code === VIR_ERR_OPERATION_INVALID) return 'InvalidState';
  if (e.code === VIR_ERR_NO_DOMAIN) return 'NotFound';
  return 'Hypervisor';
}

const UNSUPPORTED = [
  VIR_ERR_NO_SUPPORT,
  VIR_ERR_OPERATION_UNSUPPORTED,
  VIR_ERR_CONFIG_UNSUPPORTED,
  VIR_ERR_ARGUMENT_UNSUPPORTED,
];

const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

function requireBase64(value: unknown, field: string): string {
  if (typeof value !== 'string' || value.length === 0 || !BASE64.test(value)) {
    throw new DriverError('Invalid', `${field}: must be a non-empty base64 string`);
  }
  return value;
}

const xml = new XMLParser({ ignoreAttributes: false, attributeNamePrefix: '@_' });

/** The attestation operations over one libvirt connection. */
export class SevAttestation {
  /** The same operations as the driver capability `HypervisorDriver.sev`. */
  readonly support: SevSupport = {
    platformInfo: () => this.fetchCertChain(),
    launchMeasurement: (ref) => this.queryLaunchMeasurement(ref),
    injectLaunchSecret: (ref, secret) => this.injectLaunchSecret(ref, secret),
  };

  constructor(private readonly libvirt: SevLibvirt) {}

  /** `virNodeGetSEVInfo`: the platform's PDH and certificate chain. */
  async fetchCertChain(): Promise<SevPlatformInfo> {
    const p = typedParamsToRecord(
      await this.wrap('host', 'fetch SEV platform info', () => this.libvirt.nodeGetSEVInfo()),
    );
    if (typeof p.pdh !== 'string' || typeof p['cert-chain'] !== 'string') {
      throw new DriverError('Hypervisor', 'host: libvirt returned SEV info without pdh or cert-chain');
    }
    const n = (k: string) => (typeof p[k] === 'number' ? (p[k] as number) : undefined);
    return {
      pdh: p.pdh,
      certChain: p['cert-chain'],
      cpu0Id: typeof p['cpu0-id'] === 'string' ? p['cpu0-id'] : undefined,
      cbitpos: n('cbitpos'),
      reducedPhysBits: n('reduced-phys-bits'),
      maxGuests: n('max-guests'),
      maxEsGuests: n('max-es-guests'),
    };
  }

  /** `virDomainGetLaunchSecurityInfo`: the launch measurement of a (paused) guest. */
  async queryLaunchMeasurement(ref: DomainRef): Promise<SevMeasurementInfo> {
    const dom = await this.lookup(ref);
    const p = typedParamsToRecord(
      await this.wrap(dom.name, 'query launch measurement', () =>
        this.libvirt.domainGetLaunchSecurityInfo(dom),
      ),
    );
    const measurement = p['sev-measurement'];
    if (typeof measurement !== 'string') {
      throw new DriverError(
        'InvalidState',
        `domain ${dom.name}: libvirt reported no sev-measurement (is it a running SEV guest?)`,
      );
    }
    const num = (k: string) => Number(p[k] ?? 0);
    return {
      measurement,
      apiMajor: num('sev-api-major'),
      apiMinor: num('sev-api-minor'),
      buildId: num('sev-build-id'),
      policy: num('sev-policy'),
      loaderSHA: await this.loaderSha(dom),
    };
  }

  /** `virDomainSetLaunchSecurityState`: injects the owner's secret into a paused guest. */
  async injectLaunchSecret(ref: DomainRef, secret: SevSecret): Promise<void> {
    const header = requireBase64(secret.header, 'sev secret header');
    const payload = requireBase64(secret.secret, 'sev secret');
    const params: TypedParam[] = [tp.string('sev-secret-header', header), tp.string('sev-secret', payload)];
    if (secret.address !== undefined) {
      if (secret.address < 0n) throw new DriverError('Invalid', 'sev secret address: must not be negative');
      params.push(tp.ullong('sev-secret-set-address', secret.address));
    }
    const dom = await this.lookup(ref);
    await this.wrap(dom.name, 'inject launch secret', () =>
      this.libvirt.domainSetLaunchSecurityState(dom, params),
    );
  }

  private async loaderSha(dom: LibvirtDomain): Promise<string | undefined> {
    const text = await this.wrap(dom.name, 'read XML', () => this.libvirt.domainGetXMLDesc(dom));
    const loader = xml.parse(text)?.domain?.os?.loader;
    const path = typeof loader === 'string' ? loader : loader?.['#text'];
    if (typeof path !== 'string' || !path) return undefined;
    try {
      return createHash('sha256')
        .update(await readFile(path))
        .digest('hex');
    } catch {
      // The firmware lives where the daemon runs; a remote launcher may not see it.
      return undefined;
    }
  }

  private async lookup(ref: DomainRef): Promise<LibvirtDomain> {
    const name = domainName(ref);
    try {
      return await this.libvirt.domainLookupByName(name);
    } catch (e) {
      if (e instanceof LibvirtError && e.code === VIR_ERR_NO_DOMAIN) {
        throw new DriverError(
          'NotFound',
          `VirtualMachineInstance ${ref.namespace}/${ref.name}: no domain ${name} on this host`,
        );
      }
      throw new DriverError('Hypervisor', `domain ${name}: look up failed: ${(e as Error).message}`, {
        cause: e,
      });
    }
  }

  private async wrap<T>(subject: string, op: string, fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (e) {
      if (e instanceof DriverError) throw e;
      const who = subject === 'host' ? 'host' : `domain ${subject}`;
      throw new DriverError(errorCode(e), `${who}: ${op} failed: ${(e as Error).message}`, { cause: e });
    }
  }
}

/**
 * Session setup: returns a copy of `vmi` carrying the guest owner's DH certificate and
 * session blob, set to start paused so the owner can measure and inject a secret first.
 */
export function withSevSession(
  vmi: VirtualMachineInstance,
  session: { dhCert: string; session: string },
): VirtualMachineInstance {
  const dhCert = requireBase64(session.dhCert, 'spec.domain.launchSecurity.sev.dhCert');
  const blob = requireBase64(session.session, 'spec.domain.launchSecurity.sev.session');
  const out = structuredClone(vmi);
  if (!out.spec?.domain?.launchSecurity?.sev) {
    throw new DriverError('Invalid', 'spec.domain.launchSecurity.sev: session setup needs an SEV VMI');
  }
  out.spec.domain.launchSecurity.sev = { ...out.spec.domain.launchSecurity.sev, dhCert, session: blob };
  out.spec.startStrategy = 'Paused';
  return out;
}

function attestationOf(driver: HypervisorDriver): SevSupport {
  if (driver.sev) return driver.sev;
  const libvirt = (driver as { libvirt?: SevLibvirt }).libvirt;
  if (!libvirt) {
    throw new DriverError('Unsupported', `driver ${driver.name}: has no SEV attestation support`);
  }
  return new SevAttestation(libvirt).support;
}

/** Launcher operations the plugin adds (names as upstream's subresources). */
export const sevLauncherOperations: Record<string, LauncherOperation> = {
  sevFetchCertChain: async (_input, { driver }) => ({ ...(await attestationOf(driver).platformInfo()) }),
  sevQueryLaunchMeasurement: async (_input, { driver, ref }) => ({
    ...(await attestationOf(driver).launchMeasurement(ref)),
  }),
  sevInjectLaunchSecret: async (input, { driver, ref }) => {
    const address = input.address === undefined ? undefined : BigInt(input.address as string | number);
    await attestationOf(driver).injectLaunchSecret(ref, {
      header: input.header as string,
      secret: input.secret as string,
      address,
    });
    return {};
  },
};
