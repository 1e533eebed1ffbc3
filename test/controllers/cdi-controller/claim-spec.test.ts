/** A DataVolume's claim spec and importer pod carry the fields written on the DataVolume. */
import { describe, expect, it } from 'vitest';
import type { DataVolume } from '../../../src/api/generated/cdi/types';
import { claimSpecFor } from '../../../src/controllers/cdi-controller/claim-spec';
import { importerPod } from '../../../src/controllers/cdi-controller/importer-pod';

const selector = { matchLabels: { disk: 'gold' } };
const dv = (spec: DataVolume['spec']): DataVolume => ({
  apiVersion: 'cdi.kubevirt.io/v1beta1',
  kind: 'DataVolume',
  metadata: { name: 'dv', namespace: 'd' },
  spec,
});
const noOverhead = () => 0;

describe('claimSpecFor', () => {
  it('passes selector and volumeName of spec.pvc to the claim', () => {
    const r = claimSpecFor(
      dv({
        source: { blank: {} },
        pvc: {
          accessModes: ['ReadWriteOnce'],
          resources: { requests: { storage: '1Gi' } },
          selector,
          volumeName: 'pv-1',
        },
      }),
      [],
      [],
      noOverhead,
    );
    expect(r).toMatchObject({ spec: { selector, volumeName: 'pv-1', accessModes: ['ReadWriteOnce'] } });
  });

  it('passes selector and volumeName of spec.storage to the claim', () => {
    const r = claimSpecFor(
      dv({
        source: { blank: {} },
        storage: {
          accessModes: ['ReadWriteOnce'],
          volumeMode: 'Block',
          resources: { requests: { storage: '1Gi' } },
          selector,
          volumeName: 'pv-2',
        },
      }),
      [],
      [],
      noOverhead,
    );
    expect(r).toMatchObject({ spec: { selector, volumeName: 'pv-2', volumeMode: 'Block' } });
  });
});

describe('importerPod', () => {
  it("runs at the DataVolume's priorityClassName", () => {
    const input = {
      claim: { metadata: { name: 'dv', uid: 'u' } },
      volumeMode: 'Filesystem' as const,
      imageSizeBytes: 1 << 30,
      overhead: 0,
    };
    const spec = { source: { blank: {} }, storage: { resources: { requests: { storage: '1Gi' } } } };
    const withClass = importerPod(
      { ...input, dv: dv({ ...spec, priorityClassName: 'vip' }) },
      { image: 'i' },
    );
    expect(withClass.spec?.priorityClassName).toBe('vip');
    expect(importerPod({ ...input, dv: dv(spec) }, { image: 'i' }).spec?.priorityClassName).toBeUndefined();
  });
});
