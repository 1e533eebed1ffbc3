/** The field-support registry's path patterns: what they cover and where a spec sets them. */
import { describe, expect, it } from 'vitest';
import { FieldPath } from '../../../src/api/errors';
import { findSetFields, patternCovers, patternField } from '../../../src/api/validation/field-support';

describe('patternCovers', () => {
  it('matches exact leaves, list and map wildcards, and subtrees below (not at) their root', () => {
    expect(patternCovers('domain.cpu.cores', 'domain.cpu.cores')).toBe(true);
    expect(patternCovers('domain.cpu.cores', 'domain.cpu.sockets')).toBe(false);
    expect(patternCovers('volumes[*].name', 'volumes[*].name')).toBe(true);
    expect(patternCovers('nodeSelector.*', 'nodeSelector.*')).toBe(true);
    expect(patternCovers('affinity.**', 'affinity.nodeAffinity.x[*].weight')).toBe(true);
    expect(patternCovers('affinity.**', 'affinity')).toBe(false);
    expect(patternCovers('affinity.**', 'affinityX.y')).toBe(false);
  });

  it('names the field without trailing wildcards', () => {
    expect(patternField('resourceClaims[*].**')).toBe('resourceClaims');
    expect(patternField('pvc.resources.limits.*')).toBe('pvc.resources.limits');
    expect(patternField('domain.cpu.cores')).toBe('domain.cpu.cores');
  });
});

describe('findSetFields', () => {
  const root = FieldPath.of('spec');
  const spec = {
    domain: {
      devices: {
        disks: [{ name: 'a' }, { name: 'b', changedBlockTracking: true }, { changedBlockTracking: false }],
      },
    },
    resourceClaims: [],
    utilityVolumes: [{ name: 'u' }],
    nodeSelector: { a: '1' },
  };

  it('gives the concrete path of each set occurrence, skipping allowed values', () => {
    expect(findSetFields(spec, 'domain.devices.disks[*].changedBlockTracking', root, [false])).toEqual([
      'spec.domain.devices.disks[1].changedBlockTracking',
    ]);
    expect(findSetFields(spec, 'domain.devices.disks[*].changedBlockTracking', root)).toEqual([
      'spec.domain.devices.disks[1].changedBlockTracking',
      'spec.domain.devices.disks[2].changedBlockTracking',
    ]);
    expect(findSetFields(spec, 'nodeSelector.*', root)).toEqual(['spec.nodeSelector']);
  });

  it('treats an empty list as unset and a non-empty one as set', () => {
    expect(findSetFields(spec, 'resourceClaims[*].**', root)).toEqual([]);
    expect(findSetFields(spec, 'utilityVolumes[*].**', root)).toEqual(['spec.utilityVolumes']);
    expect(findSetFields(spec, 'domain.memory.guest', root)).toEqual([]);
  });
});
