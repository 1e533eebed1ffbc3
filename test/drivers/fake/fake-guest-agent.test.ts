import { describe, expect, it } from 'vitest';
import { FakeDriver, FakeHost, fakeGuestInfo } from '../../../src/drivers/fake';
import { minimalVmi } from '../../../src/testing';

describe('FakeDriver guest agent', () => {
  const ref = { namespace: 'ns', name: 'vm1' };

  it('is absent until connected, answers while running, keeps the channel but not the answer while paused', async () => {
    const d = new FakeDriver({ host: new FakeHost({ kvmUsable: true }) });
    await d.sync(minimalVmi(ref));
    expect(await d.guestAgent.connected(ref)).toBe(false);
    expect(await d.guestAgent.guestInfo(ref)).toBeUndefined();

    d.guestAgent.connect(ref, fakeGuestInfo(ref, { hostname: 'h1' }));
    expect(await d.guestAgent.connected(ref)).toBe(true);
    expect((await d.guestAgent.guestInfo(ref))?.hostname).toBe('h1');
    expect((await d.guestAgent.guestInfo(ref))?.os?.id).toBe('fake');

    await d.pause(ref);
    expect(await d.guestAgent.connected(ref)).toBe(true);
    expect(await d.guestAgent.guestInfo(ref)).toBeUndefined();
    await d.unpause(ref);
    expect((await d.guestAgent.guestInfo(ref))?.hostname).toBe('h1');

    await d.kill(ref);
    expect(await d.guestAgent.connected(ref)).toBe(false);
    d.guestAgent.disconnect(ref);
    await d.sync(minimalVmi(ref));
    expect(await d.guestAgent.guestInfo(ref)).toBeUndefined();
  });

  it('is shared by drivers on one host, and rejects an absent domain with NotFound', async () => {
    const host = new FakeHost({ kvmUsable: true });
    const a = new FakeDriver({ host });
    await a.sync(minimalVmi(ref));
    a.guestAgent.connect(ref);
    const b = new FakeDriver({ host });
    expect((await b.guestAgent.guestInfo(ref))?.hostname).toBe('vm1');
    await expect(b.guestAgent.guestInfo({ namespace: 'ns', name: 'ghost' })).rejects.toMatchObject({
      code: 'NotFound',
    });
  });
});
