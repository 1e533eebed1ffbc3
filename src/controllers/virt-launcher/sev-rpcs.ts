/**
 * The launcher's SEV attestation RPCs (upstream's GetSEVInfo, GetLaunchMeasurement,
 * InjectLaunchSecret) over the driver's optional `sev` capability, with upstream's
 * message shapes: `SEVPlatformInfo` {pdh, certChain}, `SEVMeasurementInfo`
 * {measurement, apiMajor, apiMinor, buildID, policy, loaderSHA} as JSON bytes, and
 * `SEVSecretOptions` {header, secret} (plus an optional `address`) in the request.
 */
import { status } from '@grpc/grpc-js';
import type { DomainRef, HypervisorDriver, SevSecret, SevSupport } from '../../drivers/driver';
import { LauncherRpcError } from '../launcher-protocol/rpc-error';
import { driverRpcError } from './driver-rpc-error';

function subjectOf(ref: DomainRef): string {
  return `VirtualMachineInstance ${ref.namespace}/${ref.name}`;
}

function requireSev(driver: HypervisorDriver, ref: DomainRef): SevSupport {
  if (!driver.sev) {
    throw new LauncherRpcError(
      status.UNIMPLEMENTED,
      `${subjectOf(ref)}: SEV attestation is not available: the ${driver.name} driver has no SEV support`,
    );
  }
  return driver.sev;
}

const json = (v: unknown) => new Uint8Array(Buffer.from(JSON.stringify(v)));

/** GetSEVInfo: the platform's PDH and certificate chain, as upstream's SEVPlatformInfo JSON. */
export async function getSevInfo(driver: HypervisorDriver, ref: DomainRef): Promise<Uint8Array> {
  const sev = requireSev(driver, ref);
  try {
    const info = await sev.platformInfo();
    return json({ pdh: info.pdh, certChain: info.certChain });
  } catch (e) {
    throw driverRpcError(e, subjectOf(ref), 'failed to get SEV platform info');
  }
}

/** GetLaunchMeasurement: upstream's SEVMeasurementInfo JSON of the (paused) guest. */
export async function getLaunchMeasurement(driver: HypervisorDriver, ref: DomainRef): Promise<Uint8Array> {
  const sev = requireSev(driver, ref);
  try {
    const m = await sev.launchMeasurement(ref);
    return json({
      measurement: m.measurement,
      apiMajor: m.apiMajor,
      apiMinor: m.apiMinor,
      buildID: m.buildId,
      policy: m.policy,
      ...(m.loaderSHA ? { loaderSHA: m.loaderSHA } : {}),
    });
  } catch (e) {
    throw driverRpcError(e, subjectOf(ref), 'failed to get launch measurement');
  }
}

/**
 * Parses the InjectLaunchSecret options: upstream's SEVSecretOptions JSON
 * `{header, secret}` plus an optional guest physical `address` (number, or a decimal or
 * 0x-hex string).
 */
export function parseSevSecret(raw: Uint8Array | undefined, ref: DomainRef): SevSecret {
  const bad = (msg: string) =>
    new LauncherRpcError(status.INVALID_ARGUMENT, `${subjectOf(ref)}: InjectLaunchSecret ${msg}`);
  if (!raw?.length) throw bad('options: missing (want JSON {"header": ..., "secret": ...})');
  let o: unknown;
  try {
    o = JSON.parse(Buffer.from(raw).toString('utf8'));
  } catch (e) {
    throw bad(`options: not JSON: ${(e as Error).message}`);
  }
  if (!o || typeof o !== 'object' || Array.isArray(o)) throw bad('options: must be a JSON object');
  const { header, secret, address } = o as Record<string, unknown>;
  if (typeof header !== 'string' || !header) throw bad('options.header: must be a non-empty base64 string');
  if (typeof secret !== 'string' || !secret) throw bad('options.secret: must be a non-empty base64 string');
  let addr: bigint | undefined;
  if (address !== undefined && address !== null) {
    const ok =
      (typeof address === 'number' && Number.isSafeInteger(address) && address >= 0) ||
      (typeof address === 'string' && /^(0x[0-9a-fA-F]+|\d+)$/.test(address));
    if (!ok) throw bad('options.address: must be a non-negative integer (number, decimal or 0x-hex string)');
    addr = BigInt(address as number | string);
  }
  return { header, secret, address: addr };
}

/** InjectLaunchSecret: hands the owner's secret to the paused guest. */
export async function injectLaunchSecret(
  driver: HypervisorDriver,
  ref: DomainRef,
  options: Uint8Array | undefined,
): Promise<void> {
  const sev = requireSev(driver, ref);
  const secret = parseSevSecret(options, ref);
  try {
    await sev.injectLaunchSecret(ref, secret);
  } catch (e) {
    throw driverRpcError(e, subjectOf(ref), 'failed to inject SEV launch secret');
  }
}
