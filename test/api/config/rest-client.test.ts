import { describe, expect, it } from 'vitest';
import { DEFAULT_RATE_LIMITS, restClientRateLimit } from '../../../src/api/config/rest-client';

describe('component client rate limits', () => {
  it("are upstream's defaults without configuration", () => {
    expect(restClientRateLimit('virtController')).toEqual({ qps: 200, burst: 400 });
    expect(restClientRateLimit('virtHandler', {})).toEqual({ qps: 50, burst: 100 });
    expect(restClientRateLimit('virtAPI')).toEqual({ qps: 200, burst: 400 });
    expect(restClientRateLimit('virtOperator')).toEqual(DEFAULT_RATE_LIMITS.virtOperator);
  });

  it("follow each component's token bucket in the KubeVirt configuration, 0 meaning the default", () => {
    const tb = (qps: number, burst: number) => ({
      restClient: { rateLimiter: { tokenBucketRateLimiter: { qps, burst } } },
    });
    const cfg = {
      controllerConfiguration: tb(1000, 0),
      handlerConfiguration: tb(7, 9),
      apiConfiguration: tb(0, 0),
    };
    expect(restClientRateLimit('virtController', cfg)).toEqual({ qps: 1000, burst: 400 });
    expect(restClientRateLimit('virtHandler', cfg)).toEqual({ qps: 7, burst: 9 });
    expect(restClientRateLimit('virtAPI', cfg)).toEqual({ qps: 200, burst: 400 });
    expect(restClientRateLimit('virtWebhook', cfg)).toEqual({ qps: 200, burst: 400 });
  });
});
