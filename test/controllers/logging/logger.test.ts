/** Structured logs: JSON lines with component, level and the VMI's fields; upstream's --v mapped to levels. */
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { componentLogger, levelForVerbosity, vmiFields } from '../../../src/controllers/logging/logger';

function capture(): { lines: () => Record<string, unknown>[]; stream: Writable } {
  const chunks: string[] = [];
  const stream = new Writable({
    write(c, _e, cb) {
      chunks.push(String(c));
      cb();
    },
  });
  return {
    stream,
    lines: () =>
      chunks
        .join('')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l)),
  };
}

describe('componentLogger', () => {
  it('writes one JSON object per line with component, level and the VMI fields', () => {
    const out = capture();
    const log = componentLogger('virt-handler', 2, out.stream);
    const vmi = { metadata: { namespace: 'ns1', name: 'vm1', uid: 'u-1' } };
    log.warn(vmiFields(vmi), 'sync: launcher did not answer');
    log.debug('hidden at v=2');
    const [line, ...rest] = out.lines();
    expect(rest).toEqual([]);
    expect(line).toMatchObject({
      level: 'warn',
      component: 'virt-handler',
      kind: 'VirtualMachineInstance',
      namespace: 'ns1',
      name: 'vm1',
      uid: 'u-1',
      msg: 'sync: launcher did not answer',
    });
    expect(String(line.time)).toMatch(/^\d{4}-\d\d-\d\dT/);
  });

  it('maps --v to levels: debug lines appear from v=3, trace from v=5', () => {
    expect([0, 2, 3, 4, 5, 9].map(levelForVerbosity)).toEqual([
      'info',
      'info',
      'debug',
      'debug',
      'trace',
      'trace',
    ]);
    const out = capture();
    const log = componentLogger('virt-handler', 3, out.stream);
    log.debug('shown');
    log.trace('hidden');
    expect(out.lines().map((l) => l.msg)).toEqual(['shown']);
    expect(() => levelForVerbosity(-1)).toThrow('--v: -1 is not a verbosity (0 or more)');
  });
});
