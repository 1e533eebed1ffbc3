/**
 * Client rate limits of the components (upstream pkg/virt-config's DefaultVirt*QPS/Burst)
 * and the KubeVirt CR's per-component override,
 * `spec.configuration.<component>Configuration.restClient.rateLimiter.tokenBucketRateLimiter`,
 * which upstream's components apply as it changes (ReloadableRateLimiter).
 */
import { type FieldError, type FieldPath, fieldError } from '../errors';
import type { KubeVirtConfiguration } from '../generated/types';

/** A client's sustained requests per second and burst above it. */
export interface RateLimit {
  qps: number;
  burst: number;
}

/** The components with a client, and upstream's default limit of each. */
export const DEFAULT_RATE_LIMITS = {
  virtController: { qps: 200, burst: 400 },
  virtHandler: { qps: 50, burst: 100 },
  virtAPI: { qps: 200, burst: 400 },
  virtWebhook: { qps: 200, burst: 400 },
  virtOperator: { qps: 200, burst: 400 },
} as const satisfies Record<string, RateLimit>;

/** A component whose client is rate limited: a key of {@link DEFAULT_RATE_LIMITS}. */
export type RateLimitedComponent = keyof typeof DEFAULT_RATE_LIMITS;

/** Where the KubeVirt CR configures each component's client (the operator's has no field). */
const CONFIG_FIELD = {
  virtController: 'controllerConfiguration',
  virtHandler: 'handlerConfiguration',
  virtAPI: 'apiConfiguration',
  virtWebhook: 'webhookConfiguration',
} as const;

/** `component`'s client limit under `cfg`: the configured token bucket, 0 or unset meaning the default. */
export function restClientRateLimit(component: RateLimitedComponent, cfg?: KubeVirtConfiguration): RateLimit {
  const def = DEFAULT_RATE_LIMITS[component];
  const field = component === 'virtOperator' ? undefined : CONFIG_FIELD[component];
  const tb = field ? cfg?.[field]?.restClient?.rateLimiter?.tokenBucketRateLimiter : undefined;
  return { qps: tb?.qps || def.qps, burst: tb?.burst || def.burst };
}

/** qps and burst of each configured token bucket: numbers, 0 or more (0: the default). */
export function validateRestClientConfiguration(cfg: KubeVirtConfiguration, field: FieldPath): FieldError[] {
  const errs: FieldError[] = [];
  for (const [c, f] of Object.entries(CONFIG_FIELD) as Array<[keyof typeof CONFIG_FIELD, string]>) {
    const tb = cfg[f as (typeof CONFIG_FIELD)[typeof c]]?.restClient?.rateLimiter?.tokenBucketRateLimiter;
    for (const k of ['qps', 'burst'] as const) {
      const v: unknown = tb?.[k];
      if (v === undefined || (typeof v === 'number' && Number.isFinite(v) && v >= 0)) continue;
      errs.push(
        fieldError(
          field.child(f, 'restClient', 'rateLimiter', 'tokenBucketRateLimiter', k),
          `Invalid value: ${JSON.stringify(v)}: must be a number 0 or more (0: the default, ${DEFAULT_RATE_LIMITS[c][k]})`,
        ),
      );
    }
  }
  return errs;
}
