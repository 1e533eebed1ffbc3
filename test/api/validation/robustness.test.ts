/**
 * Admission never throws on hostile input: seeded random mutations of the fixture
 * examples (nulls, wrong types, empty values, deletions) must come back as field errors
 * or a defaulted object, never as an exception.
 */
import { describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import { createInstancetypeCatalog } from '../../../src/api/instancetype/catalog';
import { expandVirtualMachine } from '../../../src/api/instancetype/expand';
import { admit } from '../../../src/api/validation/admission';
import { fixtureFiles, fixtureObjects } from '../../support/fixtures';

// biome-ignore lint/suspicious/noExplicitAny: the fuzzer writes arbitrary values anywhere
type Any = any;

const objects = fixtureFiles().flatMap((f) => fixtureObjects(f).map((o) => o.object));
const catalog = createInstancetypeCatalog(objects);
const hostile: unknown[] = [
  null,
  0,
  -1,
  '',
  'x',
  {},
  [],
  [{}],
  [null],
  true,
  1e20,
  '1Gi',
  { enabled: false },
  '../../etc',
];
const configs = [
  createClusterConfig({}, { hostArchitecture: 'amd64' }),
  createClusterConfig(
    { vmRolloutStrategy: 'LiveUpdate', network: { defaultNetworkInterface: 'masquerade' } },
    { hostArchitecture: 'arm64', featureGates: ['WorkloadEncryptionSEV', 'GPUsWithDRA', 'HostDisk'] },
  ),
];

function pathsOf(
  o: Any,
  p: (string | number)[] = [],
  out: (string | number)[][] = [],
): (string | number)[][] {
  if (p.length > 0) out.push(p);
  if (o && typeof o === 'object') {
    for (const k of Object.keys(o)) pathsOf(o[k], [...p, Array.isArray(o) ? Number(k) : k], out);
  }
  return out;
}

describe('admission robustness', () => {
  it('never throws on 3000 seeded random mutations of the fixture manifests', () => {
    let seed = 2026;
    const rnd = () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648;
    };
    let rejected = 0;
    for (let i = 0; i < 3000; i++) {
      const obj: Any = structuredClone(objects[Math.floor(rnd() * objects.length)]);
      const paths = pathsOf(obj);
      for (let m = 0; m < 4; m++) {
        const p = paths[Math.floor(rnd() * paths.length)];
        let parent: Any = obj;
        for (const k of p.slice(0, -1)) parent = parent?.[k];
        if (!parent || typeof parent !== 'object') continue;
        const key = p[p.length - 1];
        if (rnd() < 0.2 && !Array.isArray(parent)) delete parent[key];
        else parent[key] = structuredClone(hostile[Math.floor(rnd() * hostile.length)]);
      }
      for (const config of configs) {
        const result = admit(obj, config, { instancetypes: rnd() < 0.3 ? catalog : undefined });
        expect(Array.isArray(result.errors)).toBe(true);
        for (const e of result.errors)
          expect(typeof e.path === 'string' && typeof e.message === 'string').toBe(true);
        if (result.errors.length > 0) rejected++;
        else if (obj.kind === 'VirtualMachine') expandVirtualMachine(result.object as Any, catalog);
      }
    }
    // The mutations are hostile enough that most objects are rejected.
    expect(rejected).toBeGreaterThan(3000);
  });
});
