/** Config volumes' ISO names (volumeLabel, downwardAPI file paths) are refused at admission. */
import { describe, expect, it } from 'vitest';
import { createClusterConfig } from '../../../src/api/config/cluster-config';
import type { VirtualMachineInstance, Volume } from '../../../src/api/generated/types';
import { admit } from '../../../src/api/validation/admission';
import { fixture as example } from '../../support/fixtures';

const config = createClusterConfig({}, { hostArchitecture: 'amd64' });

function errorsWith(volume: Volume): { path: string; message: string }[] {
  const vmi = example<VirtualMachineInstance>('vmi-containerdisk.yaml');
  vmi.spec.volumes!.push(volume);
  vmi.spec.domain.devices.disks!.push({ name: volume.name, disk: { bus: 'virtio' } });
  return admit(vmi as never, config).errors;
}

describe('config disk names', () => {
  it('refuses downwardAPI file paths that are not plain file names', () => {
    for (const path of ['.', '..', 'a/b', '../etc/passwd', '', 'x y', 'é']) {
      const errs = errorsWith({
        name: 'dapi',
        downwardAPI: { fields: [{ path, fieldRef: { fieldPath: 'metadata.labels' } }] },
      });
      expect([path, errs.find((e) => e.path.endsWith('downwardAPI.fields[0].path'))?.message]).toEqual([
        path,
        expect.stringMatching(/must be a plain file name/),
      ]);
    }
  });

  it('refuses volume labels an ISO cannot carry, on configMap, secret and downwardAPI', () => {
    const bad = ['-x', 'a'.repeat(33), 'a b', 'a/b', '\u202eevil'];
    for (const volumeLabel of bad) {
      for (const vol of [
        { name: 'c', configMap: { name: 'cm', volumeLabel } },
        { name: 'c', secret: { secretName: 's', volumeLabel } },
        { name: 'c', downwardAPI: { fields: [], volumeLabel } },
      ] as Volume[]) {
        const kind = Object.keys(vol).find((k) => k !== 'name')!;
        const errs = errorsWith(vol);
        expect([volumeLabel, kind, errs.some((e) => e.path.endsWith(`${kind}.volumeLabel`))]).toEqual([
          volumeLabel,
          kind,
          true,
        ]);
      }
    }
  });

  it('accepts good names', () => {
    const errs = errorsWith({
      name: 'dapi',
      downwardAPI: {
        volumeLabel: 'cfg_data-1',
        fields: [{ path: 'labels.txt', fieldRef: { fieldPath: 'metadata.labels' } }],
      },
    });
    expect(errs).toEqual([]);
  });
});
