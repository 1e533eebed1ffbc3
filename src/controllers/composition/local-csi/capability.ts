/**
 * A claim's access modes and volume mode as a CSI VolumeCapability, as external-provisioner
 * and the kubelet's CSI plugin build it for a driver with SINGLE_NODE_MULTI_WRITER: RWO ->
 * SINGLE_NODE_MULTI_WRITER, RWOP -> SINGLE_NODE_SINGLE_WRITER, ROX -> MULTI_NODE_READER_ONLY,
 * RWX -> MULTI_NODE_MULTI_WRITER.
 */
import {
  VolumeCapability_AccessMode_Mode as Mode,
  type VolumeCapability,
} from '../../csi-driver/generated/csi/csi';

/** external-provisioner's default filesystem (its `--default-fstype` unset: the driver's, ext4 here). */
export const DEFAULT_FS_TYPE = 'ext4';

const MODES: Record<string, Mode> = {
  ReadWriteOnce: Mode.SINGLE_NODE_MULTI_WRITER,
  ReadWriteOncePod: Mode.SINGLE_NODE_SINGLE_WRITER,
  ReadOnlyMany: Mode.MULTI_NODE_READER_ONLY,
  ReadWriteMany: Mode.MULTI_NODE_MULTI_WRITER,
};

/** The capability of one access mode (unknown modes: UNKNOWN, which the driver refuses with its reason). */
export function volumeCapability(
  accessMode: string | undefined,
  volumeMode: string | undefined,
  fsType = DEFAULT_FS_TYPE,
): VolumeCapability {
  const mode = MODES[accessMode ?? 'ReadWriteOnce'] ?? Mode.UNKNOWN;
  return volumeMode === 'Block'
    ? { block: {}, accessMode: { mode } }
    : { mount: { fsType, mountFlags: [], volumeMountGroup: '' }, accessMode: { mode } };
}
