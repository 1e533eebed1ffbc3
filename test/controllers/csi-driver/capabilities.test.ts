/**
 * The driver's rules as pure functions (no root): which access modes and parameters it
 * takes, how a capacity range becomes a size, and which names, IDs and paths pass the
 * boundary.
 */
import { status } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { capabilityProblem, checkParameters } from '../../../src/controllers/csi-driver/access-modes';
import { fits, sizeFor } from '../../../src/controllers/csi-driver/capacity';
import { VolumeCapability_AccessMode_Mode as Mode } from '../../../src/controllers/csi-driver/generated/csi/csi';
import {
  checkHostPath,
  checkName,
  isVolumeId,
  snapshotIdFor,
  volumeIdFor,
} from '../../../src/controllers/csi-driver/ids';

const MiB = 1024 * 1024;
const mount = (mode: Mode, fsType = '') => ({
  mount: { fsType, mountFlags: [], volumeMountGroup: '' },
  accessMode: { mode },
});
const block = (mode: Mode) => ({ block: {}, accessMode: { mode } });

describe('CSI driver capabilities and sizes', () => {
  it('takes single-node modes always, multi-node ones only on a shared pool and never for filesystem writers', () => {
    for (const m of [
      Mode.SINGLE_NODE_WRITER,
      Mode.SINGLE_NODE_READER_ONLY,
      Mode.SINGLE_NODE_SINGLE_WRITER,
      Mode.SINGLE_NODE_MULTI_WRITER,
    ]) {
      expect(capabilityProblem(mount(m), false)).toBeUndefined();
      expect(capabilityProblem(block(m), false)).toBeUndefined();
    }
    expect(capabilityProblem(block(Mode.MULTI_NODE_MULTI_WRITER), false)).toMatch(
      /needs a pool shared by every node/,
    );
    expect(capabilityProblem(block(Mode.MULTI_NODE_MULTI_WRITER), true)).toBeUndefined();
    expect(capabilityProblem(mount(Mode.MULTI_NODE_READER_ONLY), true)).toBeUndefined();
    expect(capabilityProblem(mount(Mode.MULTI_NODE_SINGLE_WRITER), true)).toMatch(/use a block volume/);
    expect(capabilityProblem(mount(Mode.SINGLE_NODE_WRITER, 'btrfs'), false)).toMatch(
      /fs_type "btrfs" is not one of ext4, xfs/,
    );
    expect(capabilityProblem({ accessMode: { mode: Mode.SINGLE_NODE_WRITER } }, false)).toMatch(
      /exactly one access type/,
    );
    expect(capabilityProblem({ block: {} }, false)).toMatch(/access_mode.mode is required/);
    expect(
      capabilityProblem(
        {
          mount: { fsType: '', mountFlags: ['ro', 'x;rm -rf'], volumeMountGroup: '' },
          accessMode: { mode: 1 },
        },
        false,
      ),
    ).toMatch(/mount_flags: "x;rm -rf" is not a mount option/);
  });

  it('knows one parameter, and names any other', () => {
    expect(checkParameters('parameters', {})).toEqual({ shared: false });
    expect(checkParameters('parameters', { shared: 'true', 'csi.storage.k8s.io/pvc/name': 'x' })).toEqual({
      shared: true,
    });
    expect(() => checkParameters('parameters', { shared: 'yes' })).toThrow(
      /^parameters.shared: "yes" is neither/,
    );
    expect(() => checkParameters('parameters', { pool: 'fast' })).toThrow(
      /^parameters.pool: unknown parameter/,
    );
  });

  it('turns capacity ranges into whole 4 KiB blocks of at least 1 MiB, 1 GiB by default', () => {
    expect(sizeFor('c', undefined)).toBe(1024 * MiB);
    expect(sizeFor('c', { requiredBytes: 0, limitBytes: 10 * MiB })).toBe(10 * MiB);
    expect(sizeFor('c', { requiredBytes: 5, limitBytes: 0 })).toBe(MiB);
    expect(sizeFor('c', { requiredBytes: MiB + 1, limitBytes: 0 })).toBe(MiB + 4096);
    expect(sizeFor('c', { requiredBytes: 0, limitBytes: 0 }, 300 * MiB)).toBe(1024 * MiB);
    expect(sizeFor('c', { requiredBytes: MiB, limitBytes: 0 }, 3 * MiB)).toBe(3 * MiB);
    expect(() => sizeFor('c', { requiredBytes: 2 * MiB, limitBytes: MiB })).toThrow(
      expect.objectContaining({ code: status.OUT_OF_RANGE }),
    );
    expect(() => sizeFor('c', { requiredBytes: 0, limitBytes: 1000 })).toThrow(/no size fits/);
    expect(fits(2 * MiB, { requiredBytes: MiB, limitBytes: 0 })).toBe(true);
    expect(fits(2 * MiB, { requiredBytes: 3 * MiB, limitBytes: 0 })).toBe(false);
    expect(fits(2 * MiB, { requiredBytes: 0, limitBytes: MiB })).toBe(false);
  });

  it('derives path-safe IDs from names and refuses hostile names and paths', () => {
    expect(volumeIdFor('pvc-1')).toMatch(/^v-[0-9a-f]{32}$/);
    expect(volumeIdFor('pvc-1')).toBe(volumeIdFor('pvc-1'));
    expect(snapshotIdFor('pvc-1')).toMatch(/^s-[0-9a-f]{32}$/);
    expect(isVolumeId(volumeIdFor('../../etc'))).toBe(true);
    for (const id of ['..', 'v-../x', `${volumeIdFor('a')}/..`, `v-${'A'.repeat(32)}`])
      expect(isVolumeId(id)).toBe(false);
    expect(() => checkName('name', '')).toThrow(/^name: is required/);
    expect(() => checkName('name', 'é'.repeat(65))).toThrow(/longer than 128 bytes/);
    expect(() => checkName('name', 'a\u0000b')).toThrow(/control characters/);
    expect(checkHostPath('p', '/var/lib/kubelet/pods/x/volumes/y/')).toBe(
      '/var/lib/kubelet/pods/x/volumes/y',
    );
    expect(() => checkHostPath('p', '/a/./b')).toThrow(/not a normalised path/);
    expect(() => checkHostPath('p', '/a//b')).toThrow(/not a normalised path/);
    expect(() => checkHostPath('p', '/pool/volumes/x', '/pool')).toThrow(/inside the storage pool/);
    expect(checkHostPath('p', '/pool2/x', '/pool')).toBe('/pool2/x');
    expect(() => checkHostPath('p', `/${'a'.repeat(4001)}`)).toThrow(/longer than 4000 bytes/);
  });
});
