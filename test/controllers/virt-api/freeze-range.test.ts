/**
 * virt-api refuses a freeze whose `unfreezeTimeout` a safety-thaw timer cannot hold
 * (over 596h31m23s: a Node timer would fire after 1 ms and thaw the guest at once) with 400
 * naming the field, before anything reaches the node.
 */
import { describe, expect, it } from 'vitest';
import type { ObjectClient } from '../../../src/controllers/runtime/types';
import type { HandlerClient } from '../../../src/controllers/virt-api/handler-client';
import { HttpError } from '../../../src/controllers/virt-api/http-error';
import { vmiOperation } from '../../../src/controllers/virt-api/vmi-subresources';

const forwarded: unknown[] = [];
const handlers = {
  call: async (...args: unknown[]) => {
    forwarded.push(args);
    return {};
  },
} as unknown as HandlerClient;
const client = {
  get: async () => ({
    metadata: { name: 'v', namespace: 'ns' },
    status: { phase: 'Running', nodeName: 'n1' },
  }),
} as unknown as ObjectClient;

async function freeze(body: unknown): Promise<unknown> {
  return vmiOperation(client, handlers, 'PUT', 'ns', 'v', 'freeze', body).catch((e: unknown) => e);
}

describe('virt-api freeze: unfreezeTimeout range', () => {
  it('refuses 596h31m24s, 2^31 s and a non-duration with 400 naming unfreezeTimeout', async () => {
    forwarded.length = 0;
    for (const t of ['596h31m24s', `${2 ** 31}s`, '1e9h', 'soon', -5]) {
      const e = await freeze({ unfreezeTimeout: t });
      expect(e, String(t)).toBeInstanceOf(HttpError);
      expect((e as HttpError).code).toBe(400);
      expect((e as HttpError).message).toMatch(/^unfreezeTimeout: /);
    }
    const missing = await freeze({});
    expect((missing as HttpError).code).toBe(400);
    expect((missing as HttpError).message).toMatch(/Unfreeze timeout in freeze request is not set/);
    expect(forwarded).toEqual([]);
  });

  it('forwards the largest a timer holds, 596h31m23s, and 0 (no safety thaw)', async () => {
    forwarded.length = 0;
    expect(await freeze({ unfreezeTimeout: '596h31m23s' })).toEqual({});
    expect(await freeze({ unfreezeTimeout: '0s' })).toEqual({});
    expect(forwarded).toHaveLength(2);
  });
});
