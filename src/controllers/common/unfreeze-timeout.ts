/**
 * The range of a freeze's `unfreezeTimeout` (upstream's FreezeUnfreezeTimeout, a
 * metav1.Duration such as `"5m0s"`). Upstream's type goes to ~292 years; here the
 * launcher's safety thaw is one Node timer, and a timer longer than 2^31-1 ms fires after
 * 1 ms instead (the guest would thaw at once while the call said 200). So the maximum is
 * the longest whole number of seconds a timer holds: 2147483 s (596h31m23s, about 24.8
 * days), far beyond any backup window. virt-api, virt-handler and the launcher all check it,
 * so a call that goes around one of them still cannot overflow the timer or the RPC's
 * field.
 */
import { parseGoDuration } from './go-duration';

/** Largest unfreeze timeout in whole seconds: the longest a Node timer can wait. */
export const MAX_UNFREEZE_TIMEOUT_SECONDS = Math.floor((2 ** 31 - 1) / 1000);

/** Whether `seconds` is a whole number of seconds a safety thaw can wait (0: no thaw). */
export function isUnfreezeTimeoutSeconds(seconds: number): boolean {
  return Number.isInteger(seconds) && seconds >= 0 && seconds <= MAX_UNFREEZE_TIMEOUT_SECONDS;
}

/**
 * The whole seconds of an `unfreezeTimeout` value (as upstream's handler passes them on,
 * truncated); throws naming `field` when it is not a duration or out of range.
 */
export function unfreezeTimeoutSeconds(value: unknown, field = 'unfreezeTimeout'): number {
  const ms = parseGoDuration(value, field);
  if (ms < 0) throw new Error(`${field}: ${JSON.stringify(value)} is negative`);
  const seconds = Math.floor(ms / 1000);
  if (!isUnfreezeTimeoutSeconds(seconds))
    throw new Error(
      `${field}: ${JSON.stringify(String(value).slice(0, 64))} is over the maximum of ${MAX_UNFREEZE_TIMEOUT_SECONDS}s (596h31m23s)`,
    );
  return seconds;
}
