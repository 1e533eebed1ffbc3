/** The converter is pure: it never mutates its inputs and the same inputs give the same XML. */
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { parse } from 'yaml';
import type { VirtualMachineInstance } from '../../src/api/generated/types';
import { convertVMIToXML } from '../../src/converter';
import { testContext } from './support/contexts';
import { admit } from './support/examples';

function deepFreeze<T>(o: T): T {
  if (o && typeof o === 'object' && !Object.isFrozen(o)) {
    Object.freeze(o);
    for (const v of Object.values(o as Record<string, unknown>)) deepFreeze(v);
  }
  return o;
}

const dir = path.join(import.meta.dirname, 'golden');
const vmis = readdirSync(dir)
  .filter((f) => f.endsWith('.yaml'))
  .map((f) => [f, admit(parse(readFileSync(path.join(dir, f), 'utf8')) as VirtualMachineInstance)] as const);

describe('converter purity', () => {
  it.each(vmis)('%s: frozen inputs convert, twice to the same XML', (_f, vmi) => {
    const ctx = testContext({
      blockVolumes: new Set(['fast', 'shared-lun']),
      backingFormats: { root: 'qcow2' },
    });
    // Frozen objects throw on any write in strict-mode code, so a mutation would fail here.
    deepFreeze(vmi);
    deepFreeze(ctx);
    const first = convertVMIToXML(vmi, ctx);
    expect(convertVMIToXML(vmi, ctx)).toBe(first);
  });
});
