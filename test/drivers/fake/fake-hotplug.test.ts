/** The fake driver's volume hotplug: the same contract as the libvirt driver's (disk-hotplug.test.ts). */
import { describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../src/api/generated/types';
import { FakeDriver } from '../../../src/drivers/fake';

const vmi = (hot: string[]): VirtualMachineInstance =>
  ({
    metadata: { name: 'v', namespace: 'ns', uid: 'u' },
    spec: {
      domain: { devices: {}, resources: { requests: { memory: '64Mi' } } },
      volumes: hot.map((n) => ({ name: n, persistentVolumeClaim: { claimName: n, hotpluggable: true } })),
    },
  }) as VirtualMachineInstance;

describe('fake driver hotplug', () => {
  it('attaches ready volumes, detaches those gone, and refuses a stopped domain', async () => {
    const d = new FakeDriver();
    const ref = { namespace: 'ns', name: 'v' };
    await expect(d.hotplug.syncDisks(vmi(['a']), {})).rejects.toThrow('no domain');
    await d.sync(vmi([]), { useEmulation: true });
    expect(await d.hotplug.syncDisks(vmi(['a', 'b']), { hotplugReady: new Set(['a']) })).toEqual(['a']);
    expect(await d.hotplug.syncDisks(vmi(['a', 'b']), { hotplugReady: new Set(['a', 'b']) })).toEqual([
      'a',
      'b',
    ]);
    expect(await d.hotplug.syncDisks(vmi(['b']), {})).toEqual(['b']);
    await d.hotplug.detachDevice(ref, '<disk><alias name="ua-b"/></disk>');
    expect(await d.hotplug.syncDisks(vmi([]), {})).toEqual([]);
    await d.hotplug.attachDevice(ref, '<disk><alias name="ua-c"/></disk>');
    await expect(d.hotplug.attachDevice(ref, '<disk><alias name="ua-c"/></disk>')).rejects.toThrow(
      'is attached',
    );
    await d.kill(ref);
    await expect(d.hotplug.syncDisks(vmi([]), {})).rejects.toThrow('cannot hotplug disks');
  });
});
