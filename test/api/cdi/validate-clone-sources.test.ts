/**
 * validateDataVolume's rules for the clone sources (`source.pvc`, `source.snapshot`,
 * `sourceRef`) and for `http.insecureSkipVerify`, which no code honours and so is refused.
 */
import { describe, expect, it } from 'vitest';
import { validateDataVolume } from '../../../src/api/cdi/validate-datavolume';
import { formatFieldError } from '../../../src/api/errors';
import type { DataVolume } from '../../../src/api/generated/cdi/types';

const check = (spec: Record<string, unknown>, namespace: string | undefined = 'ns') =>
  validateDataVolume({
    metadata: { name: 'dv', ...(namespace ? { namespace } : {}) },
    spec: { storage: {}, ...spec },
  } as DataVolume).map((e) => formatFieldError('DataVolume', 'dv', e));

describe('validateDataVolume: clone sources', () => {
  it('accepts a same-namespace pvc or snapshot source, and a DataSource sourceRef, without a size', () => {
    expect(check({ source: { pvc: { namespace: 'ns', name: 'src' } } })).toEqual([]);
    expect(check({ source: { pvc: { name: 'src' } } })).toEqual([]);
    expect(check({ source: { snapshot: { namespace: 'ns', name: 'snap' } } })).toEqual([]);
    expect(check({ sourceRef: { kind: 'DataSource', name: 'golden', namespace: 'images' } })).toEqual([]);
  });

  it('refuses another namespace, a missing name, another sourceRef kind, and both source and sourceRef', () => {
    expect(check({ source: { pvc: { namespace: 'other', name: 'src' } } })).toEqual([
      "DataVolume/dv: spec.source.pvc.namespace: cloning from namespace other into ns is not supported: the source must be in the DataVolume's namespace",
    ]);
    expect(check({ source: { snapshot: { namespace: 'ns', name: '' } } })).toEqual([
      "DataVolume/dv: spec.source.snapshot.name: Required value: the source VolumeSnapshot's name",
    ]);
    expect(check({ sourceRef: { kind: 'PersistentVolumeClaim', name: 'x' } })).toEqual([
      'DataVolume/dv: spec.sourceRef.kind: Unsupported sourceRef kind "PersistentVolumeClaim": only DataSource',
    ]);
    expect(
      check({ source: { blank: {} }, sourceRef: { kind: 'DataSource', name: 'x' } }).join('; '),
    ).toContain('spec.source: Data volume should have either Source or SourceRef');
  });

  it('refuses http.insecureSkipVerify (it was accepted and ignored)', () => {
    expect(check({ source: { http: { url: 'https://10.0.0.1/d.img', insecureSkipVerify: true } } })).toEqual([
      "DataVolume/dv: spec.source.http.insecureSkipVerify: skipping TLS verification is not supported: give the server's CA with certConfigMap",
    ]);
  });
});
