/**
 * containerDisk volumes through the container runtime (a kubelet node): upstream's
 * launcher pod runs each containerDisk image as a container of the pod, with a small
 * static binary from the launcher image (copied by an init container into an emptyDir),
 * because a containerDisk image has no userland. Here the same shape as init containers:
 * `container-disk-binary` copies the launcher image's static busybox into
 * `virt-bin-share-dir`, then one `volume<name>` init container per containerDisk, from
 * its image, copies the disk (the one file under /disk/, or `path`) to the backing file
 * the launcher uses, `<container-disks>/disk_<i>.img`. The copy is the difference from
 * upstream (which reaches the disk through /proc/<pid>/root without copying); the
 * launcher's qcow2 overlay on it keeps the guest's writes apart as before.
 */
import { normalize } from 'node:path';
import type { VirtualMachineInstance } from '../../../api/generated/types';
import { LAUNCHER_DIRS } from '../../common/launcher-args';
import type { PodContainer } from '../../common/pod';
import { PodRenderError } from './pod-render-error';

/** Where `container-disk-binary` puts busybox (the `virt-bin-share-dir` emptyDir). */
export const CONTAINER_DISK_BIN_DIR = '/init/usr/bin';

// $0 = the destination, $1 = the file inside the image (or none: the one file under /disk/).
const COPY_SCRIPT =
  'if [ $# -eq 0 ]; then set -- /disk/*; fi; ' +
  'if [ $# -ne 1 ] || [ ! -f "$1" ]; then echo "containerDisk image must hold exactly one file under /disk/ (found: $*); or set path" >&2; exit 1; fi; ' +
  'cp -- "$1" "$0.tmp" && mv -- "$0.tmp" "$0"';

/** The init containers of the VMI's containerDisk volumes (none when it has none). */
export function containerDiskInitContainers(
  vmi: VirtualMachineInstance,
  launcherImage: string,
  defaultPullPolicy: string,
  securityContext: PodContainer['securityContext'],
): PodContainer[] {
  const disks = (vmi.spec.volumes ?? [])
    .map((v, i) => ({ v, i }))
    .filter(({ v }) => v.containerDisk !== undefined);
  if (disks.length === 0) return [];
  const binMount = { name: 'virt-bin-share-dir', mountPath: CONTAINER_DISK_BIN_DIR };
  const diskMount = { name: 'container-disks', mountPath: LAUNCHER_DIRS.containerDisks };
  const resources = { requests: { cpu: '10m', memory: '40Mi' }, limits: { cpu: '100m', memory: '40Mi' } };
  const out: PodContainer[] = [
    {
      name: 'container-disk-binary',
      image: launcherImage,
      imagePullPolicy: defaultPullPolicy,
      command: ['cp', '/bin/busybox', `${CONTAINER_DISK_BIN_DIR}/busybox`],
      resources,
      securityContext,
      volumeMounts: [binMount],
    },
  ];
  for (const { v, i } of disks) {
    const cd = v.containerDisk!;
    const field = `spec.volumes[${i}].containerDisk`;
    if (!cd.image) throw new PodRenderError(`${field}.image: is empty`);
    // The launcher's backing-file name (converter volumePaths.containerDiskBacking).
    const args = [`${LAUNCHER_DIRS.containerDisks}/disk_${i}.img`];
    if (cd.path) {
      // Upstream: an absolute path inside the image; it must stay inside it.
      const p = normalize(`/${cd.path}`);
      if (p === '/' || p.split('/').includes('..') || p.endsWith('/'))
        throw new PodRenderError(`${field}.path: '${cd.path}' is not a file inside the image`);
      args.push(p);
    }
    out.push({
      name: `volume${v.name}`,
      image: cd.image,
      imagePullPolicy: cd.imagePullPolicy ?? defaultPullPolicy,
      command: [`${CONTAINER_DISK_BIN_DIR}/busybox`, 'sh', '-c', COPY_SCRIPT],
      args,
      resources,
      securityContext,
      volumeMounts: [binMount, diskMount],
    });
  }
  return out;
}
