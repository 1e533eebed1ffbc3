/**
 * The webhooks' body byte budget on its own: large bodies share what the reserve leaves,
 * small ones may use the reserve, a body past the budget gets 429 (declared or streamed),
 * a body trickling in past the read timeout gets 408, and every refusal gives its bytes back.
 */
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { BodyBudget, readBudgetedBody } from '../../../src/controllers/virt-api/body-budget';
import type { HttpError } from '../../../src/controllers/virt-api/http-error';

const options = { capacity: 1000, reserve: 400, smallBytes: 100, readTimeoutMs: 200 };

/** A request body stream with these headers. */
function body(headers: Record<string, string> = {}) {
  return Object.assign(new PassThrough(), { headers });
}

const refusal = (p: Promise<unknown>) =>
  p.then(
    () => undefined,
    (e: HttpError) => [e.code, e.message],
  );

describe('body budget', () => {
  it('holds declared sizes until done; large bodies leave the reserve to small ones', async () => {
    const budget = new BodyBudget(options);
    const big = body({ 'content-length': '600' });
    const reading = readBudgetedBody(big, budget, 5000, 'review');
    big.end(Buffer.alloc(600));
    const first = await reading;
    expect(budget.inUse).toBe(600);
    expect(
      await refusal(readBudgetedBody(body({ 'content-length': '300' }), budget, 5000, 'review')),
    ).toEqual([
      429,
      'review of 300 bytes refused: 0.0 MiB of request bodies are being admitted, the budget is 0.0 MiB; retry later',
    ]);
    const small = body({ 'content-length': '100' });
    const smallRead = readBudgetedBody(small, budget, 5000, 'review');
    small.end(Buffer.alloc(100));
    (await smallRead).done();
    first.done();
    first.done(); // twice is harmless
    expect(budget.inUse).toBe(0);
  });

  it('takes a body without Content-Length chunk by chunk and refuses it past the budget', async () => {
    const budget = new BodyBudget(options);
    const s = body();
    const reading = refusal(readBudgetedBody(s, budget, 5000, 'review'));
    s.write(Buffer.alloc(500));
    s.write(Buffer.alloc(500));
    s.end();
    expect(await reading).toEqual([
      429,
      'review of 1000 bytes refused: 0.0 MiB of request bodies are being admitted, the budget is 0.0 MiB; retry later',
    ]);
    expect(budget.inUse).toBe(0);
  });

  it('refuses a declared size over the limit with 413 before reading, and a streamed one too', async () => {
    const budget = new BodyBudget(options);
    expect(
      await refusal(readBudgetedBody(body({ 'content-length': '6000' }), budget, 5000, 'review')),
    ).toEqual([413, 'review of 6000 bytes exceeds the 5000-byte limit']);
    const s = body();
    const reading = refusal(readBudgetedBody(s, budget, 50, 'review'));
    s.end(Buffer.alloc(60));
    expect(await reading).toEqual([413, 'review exceeds the 50-byte limit']);
    expect(budget.inUse).toBe(0);
  });

  it('gives up on a body still arriving after the read timeout (408) and frees its share', async () => {
    const budget = new BodyBudget(options);
    const s = body({ 'content-length': '500' });
    const reading = refusal(readBudgetedBody(s, budget, 5000, 'review'));
    s.write(Buffer.alloc(10));
    expect(budget.inUse).toBe(500);
    expect(await reading).toEqual([408, 'review not received within 0.2 s (10 bytes read)']);
    expect(budget.inUse).toBe(0);
  });
});
