/**
 * Certificate durations from `spec.certificateRotateStrategy.selfSigned`, as upstream
 * reads them: `ca.duration` / `ca.renewBefore` and `server.duration` / `server.renewBefore`
 * (the deprecated caRotateInterval, caOverlapInterval and certRotateInterval stand in when
 * the new fields are absent). Defaults: CA 7 days, server certificates 1 day, renew
 * 20% before the end.
 */
import type { KubeVirtSpec } from '../../api/generated/types';
import { parseDuration } from './duration';

/** Durations in milliseconds. */
export interface CertDurations {
  caDuration: number;
  caRenewBefore: number;
  serverDuration: number;
  serverRenewBefore: number;
}

const DAY = 86_400_000;
const PATH = 'spec.certificateRotateStrategy.selfSigned';

/** The durations the CR asks for; throws naming the field when one is malformed or inconsistent. */
export function certDurations(spec: KubeVirtSpec | undefined): CertDurations {
  const s = spec?.certificateRotateStrategy?.selfSigned;
  const d = (v: string | undefined, path: string) =>
    v === undefined ? undefined : parseDuration(v, `${PATH}.${path}`);
  const caDuration =
    d(s?.ca?.duration, 'ca.duration') ?? d(s?.caRotateInterval, 'caRotateInterval') ?? 7 * DAY;
  const caRenewBefore =
    d(s?.ca?.renewBefore, 'ca.renewBefore') ??
    d(s?.caOverlapInterval, 'caOverlapInterval') ??
    caDuration * 0.2;
  const serverDuration =
    d(s?.server?.duration, 'server.duration') ?? d(s?.certRotateInterval, 'certRotateInterval') ?? DAY;
  const serverRenewBefore = d(s?.server?.renewBefore, 'server.renewBefore') ?? serverDuration * 0.2;
  if (caDuration <= 0) throw new Error(`${PATH}.ca.duration: must be positive`);
  if (serverDuration <= 0) throw new Error(`${PATH}.server.duration: must be positive`);
  if (caRenewBefore >= caDuration)
    throw new Error(`${PATH}.ca.renewBefore: must be shorter than ca.duration`);
  if (serverRenewBefore >= serverDuration)
    throw new Error(`${PATH}.server.renewBefore: must be shorter than server.duration`);
  // A leaf never outlives its CA: renewing it later than the CA would renew it on every pass.
  if (serverRenewBefore > caRenewBefore)
    throw new Error(`${PATH}.server.renewBefore: must not exceed ca.renewBefore`);
  if (serverDuration > caDuration) throw new Error(`${PATH}.server.duration: must not exceed ca.duration`);
  return { caDuration, caRenewBefore, serverDuration, serverRenewBefore };
}
