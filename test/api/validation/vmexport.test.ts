/** Admission of VirtualMachineExport: upstream's vmexport admitter messages and field paths. */
import { describe, expect, it } from 'vitest';
import { validateVirtualMachineExport } from '../../../src/api/validation/vmexport';

const spec = (source: object, extra: object = {}) => ({ spec: { source, ...extra } });

describe('validateVirtualMachineExport', () => {
  it('accepts the three sources with their groups', () => {
    expect(
      validateVirtualMachineExport(spec({ kind: 'PersistentVolumeClaim', name: 'p' }), 'CREATE'),
    ).toEqual([]);
    expect(
      validateVirtualMachineExport(
        spec({ apiGroup: '', kind: 'PersistentVolumeClaim', name: 'p' }),
        'CREATE',
      ),
    ).toEqual([]);
    expect(
      validateVirtualMachineExport(
        spec({ apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'v' }, { ttlDuration: '1h30m' }),
        'CREATE',
      ),
    ).toEqual([]);
    expect(
      validateVirtualMachineExport(
        spec({ apiGroup: 'snapshot.kubevirt.io', kind: 'VirtualMachineSnapshot', name: 's' }),
        'CREATE',
      ),
    ).toEqual([]);
  });

  it('refuses wrong groups, empty names, other kinds, a bad TTL or token Secret name', () => {
    const msgs = (o: object) =>
      validateVirtualMachineExport(o, 'CREATE').map((e) => `${e.path}: ${e.message}`);
    expect(msgs(spec({ apiGroup: 'v1', kind: 'PersistentVolumeClaim', name: '' }))).toEqual([
      'spec.source.name: PVC name must not be empty',
      'spec.source.APIGroup: PVC API group must be missing or blank',
    ]);
    expect(msgs(spec({ kind: 'VirtualMachine', name: 'v' }))).toEqual([
      'spec.source.APIGroup: VM API group must be kubevirt.io',
    ]);
    expect(msgs(spec({ kind: 'Pod', name: 'x' }))).toEqual(['spec.source.kind: invalid kind']);
    expect(msgs(spec({ apiGroup: 'backup.kubevirt.io', kind: 'VirtualMachineBackup', name: 'b' }))).toEqual([
      'spec.source.kind: VirtualMachineBackup sources are not supported by kubevirt-ts yet',
    ]);
    expect(
      msgs(
        spec(
          { kind: 'PersistentVolumeClaim', name: 'p' },
          { ttlDuration: 'soon', tokenSecretRef: 'Bad_Name' },
        ),
      ),
    ).toEqual([
      'spec.ttlDuration: "soon" is not a positive duration (e.g. 2h, 30m)',
      'spec.tokenSecretRef: "Bad_Name" is not a Secret name',
    ]);
  });

  it('keeps the spec immutable', () => {
    const a = spec({ kind: 'PersistentVolumeClaim', name: 'p' });
    expect(validateVirtualMachineExport(a, 'UPDATE', a)).toEqual([]);
    expect(
      validateVirtualMachineExport(spec({ kind: 'PersistentVolumeClaim', name: 'q' }), 'UPDATE', a),
    ).toEqual([{ path: 'spec', message: 'spec in immutable after creation', type: 'FieldValueInvalid' }]);
  });
});
