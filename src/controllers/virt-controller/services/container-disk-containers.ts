/**
 * containerDisk volumes through the container runtime (a kubelet node). Each containerDisk
 * image runs as a regular container of the launcher pod, `volume<name>`, beside
 * `compute`, for the pod's lifetime, as upstream's does. A containerDisk image has no
 * userland, so the container runs a static busybox from the launcher image, put into the
 * `virt-bin-share-dir` emptyDir first.
 *
 * Upstream puts its binary there with an init container (`container-disk-binary`); here
 * the compute container's postStart hook copies it. The kubelet starts a pod's containers
 * in order and the next only once the previous one's postStart hook has returned, so the
 * volume containers find the binary; and it starts an init container's successor only
 * once its PLEG relist (once a second) has seen the init container exit, which cost up
 * to a second before compute could start, for each init container.
 *
 * Upstream's volume container serves its image's disk in place (virt-handler reaches it
 * through /proc/<pid>/root); this one copies it (the one file under /disk/, or `path`) to
 * the launcher's backing file `<container-disks>/disk_<i>.img`, with a rename when
 * complete, then waits. A failed copy leaves `disk_<i>.img.error` with the reason (and
 * the container's log): the launcher waits for one of the two (volume-prep.ts) and reports
 * the error under the volume's field path. The copy overlaps the launcher's start-up; the
 * launcher's qcow2 overlay on it keeps the guest's writes apart.
 *
 * The container ends when that file is gone: the launcher removes it as it exits
 * (container-disk-cleanup.ts), as upstream's volume container ends when the launcher
 * removed its socket. So a launcher pod whose guest left (a migration source) completes
 * (Succeeded), which the evacuation controller and `kubectl drain` wait for.
 */
import { normalize } from 'node:path';
import type { VirtualMachineInstance } from '../../../api/generated/types';
import { LAUNCHER_DIRS } from '../../common/launcher-args';
import type { PodContainer } from '../../common/pod';
import { PodRenderError } from './pod-render-error';

/** Where compute's postStart hook puts busybox (the `virt-bin-share-dir` emptyDir). */
export const CONTAINER_DISK_BIN_DIR = '/init/usr/bin';

const BUSYBOX = `${CONTAINER_DISK_BIN_DIR}/busybox`;

/**
 * The volume container's script, run by `busybox sh -c` with $0 = the destination and
 * $1 = the file inside the image (or none: the one file under /disk/). Either outcome is
 * final and atomic (a rename); the container then stays running and ready, as upstream's
 * does, until the launcher removes the outcome's file (checked each second), and exits 0.
 * Exported for its test.
 */
export function containerDiskCopyScript(busybox = BUSYBOX): string {
  const waitGone = (f: string) => `while [ -e "${f}" ]; do ${busybox} sleep 1; done; exit 0`;
  const sleep = waitGone('$0');
  return [
    `fail() { echo "$1" >&2; echo "$1" > "$0.error.tmp" && mv -- "$0.error.tmp" "$0.error"; ${waitGone('$0.error')}; }`,
    'if [ $# -eq 1 ]; then [ -f "$1" ] || fail "path $1 is not a file in the image"',
    'else set -- /disk/*; { [ $# -eq 1 ] && [ -f "$1" ]; } || fail "the image must hold exactly one file under /disk/ (found: $*); or set path"; fi',
    'err=$(cp -- "$1" "$0.tmp" 2>&1) || fail "copying $1 failed: $err"',
    'mv -- "$0.tmp" "$0" || fail "moving the copy into place failed"',
    sleep,
  ].join('; ');
}

/** The launcher pod's containers for its containerDisk volumes. */
export interface ContainerDiskContainers {
  /** What the compute container gets: the binary's mount and the hook copying it (none without containerDisks). */
  compute?: Required<Pick<PodContainer, 'volumeMounts' | 'lifecycle'>>;
  /** One `volume<name>` container per containerDisk volume, after `compute`. */
  containers: PodContainer[];
}

/** The containers of the VMI's containerDisk volumes (none when it has none). */
export function containerDiskContainers(
  vmi: VirtualMachineInstance,
  defaultPullPolicy: string,
  securityContext: PodContainer['securityContext'],
): ContainerDiskContainers {
  const disks = (vmi.spec.volumes ?? [])
    .map((v, i) => ({ v, i }))
    .filter(({ v }) => v.containerDisk !== undefined);
  if (disks.length === 0) return { containers: [] };
  const binMount = { name: 'virt-bin-share-dir', mountPath: CONTAINER_DISK_BIN_DIR };
  const diskMount = { name: 'container-disks', mountPath: LAUNCHER_DIRS.containerDisks };
  const resources = { requests: { cpu: '10m', memory: '40Mi' }, limits: { cpu: '100m', memory: '40Mi' } };
  const compute = {
    volumeMounts: [binMount],
    lifecycle: { postStart: { exec: { command: ['cp', '/bin/busybox', BUSYBOX] } } },
  };
  const containers: PodContainer[] = [];
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
    containers.push({
      name: `volume${v.name}`,
      image: cd.image,
      imagePullPolicy: cd.imagePullPolicy ?? defaultPullPolicy,
      command: [BUSYBOX, 'sh', '-c', containerDiskCopyScript()],
      args,
      resources,
      securityContext,
      volumeMounts: [binMount, diskMount],
    });
  }
  return { compute, containers };
}
