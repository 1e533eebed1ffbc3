/**
 * Where container images (kernel-boot containers) are found unpacked on the host. There
 * is no container runtime under the local pod runtime: images are directories in a local
 * image store, one per image reference, named by {@link imageDirName}.
 */
import { join } from 'node:path';

/** Env var naming the root of the local image store. */
export const IMAGE_ROOT_ENV = 'KUBEVIRT_TS_IMAGE_ROOT';

/**
 * A file-system-safe, collision-free directory name for an image reference: letters,
 * digits, `.` and `-` stay; every other byte becomes `_xx` (hex).
 */
export function imageDirName(image: string): string {
  if (!image) throw new Error('image reference is empty');
  const out = Buffer.from(image, 'utf8')
    .toString('latin1')
    .replace(/[^A-Za-z0-9.-]/g, (c) => `_${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
  // "." and ".." would name the root or its parent.
  return out === '.' || out === '..' ? `_2e${out.slice(1)}` : out;
}

/** The directory of `image` under `root`. */
export function imageDir(root: string, image: string): string {
  return join(root, imageDirName(image));
}
