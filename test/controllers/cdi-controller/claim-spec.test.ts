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

  it('mounts each secretExtraHeaders Secret at /extraheaders/secret<i>, as CDI, and says where', () => {
    const pod = importerPod(
      {
        claim: { metadata: { name: 'dv', uid: 'u' } },
        volumeMode: 'Filesystem',
        imageSizeBytes: 1 << 30,
        overhead: 0,
        dv: dv({
          source: { http: { url: 'https://h/disk.img.gz', secretExtraHeaders: ['a', 'b'] } },
          storage: { resources: { requests: { storage: '1Gi' } } },
        }),
      },
      { image: 'i' },
    );
    expect(pod.spec?.volumes).toEqual(
      expect.arrayContaining([
        { name: 'cdi-extra-headers-vol-0', secret: { secretName: 'a' } },
        { name: 'cdi-extra-headers-vol-1', secret: { secretName: 'b' } },
      ]),
    );
    const c = pod.spec?.containers[0] as {
      volumeMounts?: object[];
      env?: { name: string; value?: string }[];
    };
    expect(c.volumeMounts).toEqual(
      expect.arrayContaining([
        { name: 'cdi-extra-headers-vol-0', mountPath: '/extraheaders/secret0', readOnly: true },
        { name: 'cdi-extra-headers-vol-1', mountPath: '/extraheaders/secret1', readOnly: true },
      ]),
    );
    expect(c.env).toContainEqual({ name: 'IMPORTER_SECRET_EXTRA_HEADERS_DIR', value: '/extraheaders' });
  });
});
