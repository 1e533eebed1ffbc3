/**
 * `virtctl memory-dump`'s claim for `--create-claim` (upstream's generatePVC: the size
 * given, ReadWriteOnce unless asked, the storage class when given, the storage-profile
 * label; read-only and unknown access modes refused with upstream's words). The command
 * itself runs in test/cluster/memory-dump.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { memoryDumpClaim } from '../../../src/cli/commands/virtctl/memory-dump';

describe('virtctl memory-dump', () => {
  it('makes the claim upstream makes', () => {
    expect(memoryDumpClaim('ns', 'md', 252706816n, 'fast', undefined)).toEqual({
      apiVersion: 'v1',
      kind: 'PersistentVolumeClaim',
      metadata: { name: 'md', namespace: 'ns', labels: { 'cdi.kubevirt.io/applyStorageProfile': 'true' } },
      spec: {
        accessModes: ['ReadWriteOnce'],
        resources: { requests: { storage: '241Mi' } },
        storageClassName: 'fast',
      },
    });
    expect(memoryDumpClaim('ns', 'md', 1024n ** 3n, undefined, 'ReadWriteMany').spec).toEqual({
      accessModes: ['ReadWriteMany'],
      resources: { requests: { storage: '1Gi' } },
    });
    expect(() => memoryDumpClaim('ns', 'md', 1n, undefined, 'ReadOnlyMany')).toThrow(
      'cannot dump memory to a readonly pvc, use either ReadWriteOnce or ReadWriteMany if supported',
    );
    expect(() => memoryDumpClaim('ns', 'md', 1n, undefined, 'Bogus')).toThrow(
      'invalid access mode, use either ReadWriteOnce or ReadWriteMany if supported',
    );
  });
});
