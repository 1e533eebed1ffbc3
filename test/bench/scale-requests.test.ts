import { describe, expect, it } from 'vitest';
import { diffCounts, perVm, writeTotal } from '../../bench/scale/request-count';

describe('scale benchmark request counts', () => {
  it('diffs two snapshots, leaving out kinds that did not move', () => {
    expect(
      diffCounts(
        { 'list pods': 1, 'create pods': 10 },
        { 'list pods': 1, 'create pods': 30, 'update virtualmachineinstances': 40 },
      ),
    ).toEqual({ 'create pods': 20, 'update virtualmachineinstances': 40 });
  });

  it('counts writes only, and prints per VM busiest first', () => {
    const c = {
      'list pods': 4,
      'watch pods': 1,
      'get pods': 2,
      'create pods': 10,
      'patch pods': 5,
      'delete pods': 1,
    };
    expect(writeTotal(c)).toBe(16);
    expect(perVm({ 'create pods': 10, 'updateStatus virtualmachines': 35 }, 10)).toBe(
      'updateStatus virtualmachines 3.50, create pods 1.00',
    );
  });
});
