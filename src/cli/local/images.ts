/**
 * The local image store. Local mode reaches no registry, so a container image reference
 * (`spec.volumes[].containerDisk.image`, `spec.domain.firmware.kernelBoot.container.image`)
 * resolves to a directory of the store that stands for the image's root file system: a
 * kernel-boot image holds the files its `kernelPath`/`initrdPath` name (e.g. `/vmlinuz`,
 * `/initrd.img`), a containerDisk image holds its disk under `/disk/` as upstream's
 * container disks do. The directory name comes from {@link imageDirName}, the same
 * mapping the launcher uses to find it.
 */
import { cpSync, existsSync, mkdirSync, readdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { basename, join } from 'node:path';
import type { VirtualMachine, VirtualMachineInstance } from '../../api/generated/types';
import { imageDir, imageDirName } from '../../controllers/virt-launcher/image-dirs';

/** One image of the store. */
export interface LocalImage {
  name: string;
  dir: string;
}

/** The error for a missing image: names it and the command that imports it. */
export class ImageNotFoundError extends Error {
  constructor(
    readonly image: string,
    readonly field: string,
    root: string,
  ) {
    super(
      `${field}: image ${JSON.stringify(image)} is not in the local image store (${root}); ` +
        `registries are not reached in local mode: import it with \`kubevirt-ts image import ${image} <file-or-dir>\``,
    );
  }
}

/** A reference is a container image name: no whitespace, no control characters, no `..` path step. */
export function checkImageName(name: string): void {
  if (
    !name ||
    name.length > 255 ||
    [...name].some((c) => c.charCodeAt(0) < 0x21 || c.charCodeAt(0) === 0x7f)
  ) {
    throw new Error(`image name ${JSON.stringify(name)}: must be 1-255 visible characters`);
  }
  if (!/^[a-z0-9]/.test(name) || !/^[a-z0-9._\-/:@]+$/.test(name)) {
    throw new Error(
      `image name ${JSON.stringify(name)}: must be a container image reference (lowercase letters, digits, . _ - / : @)`,
    );
  }
}

/** The local image store rooted at a directory. */
export class ImageStore {
  constructor(readonly root: string) {}

  /** The directory of `name` (whether or not it exists). */
  dirOf(name: string): string {
    return imageDir(this.root, name);
  }

  has(name: string): boolean {
    return existsSync(this.dirOf(name));
  }

  /**
   * Imports `source` as image `name`, replacing any previous one: a directory is copied as
   * the image's root file system (symlinks followed); a single file becomes the image's
   * disk at `/disk/<file name>` (a containerDisk).
   */
  import(name: string, source: string): LocalImage {
    checkImageName(name);
    if (!existsSync(source)) throw new Error(`image import ${name}: ${source}: no such file or directory`);
    mkdirSync(this.root, { recursive: true, mode: 0o755 });
    const dir = this.dirOf(name);
    // Copy beside the target, then swap it in, so a failed copy leaves the old image intact.
    const tmp = `${dir}.importing-${process.pid}`;
    rmSync(tmp, { recursive: true, force: true });
    if (statSync(source).isDirectory()) {
      cpSync(source, tmp, { recursive: true, dereference: true });
    } else {
      mkdirSync(join(tmp, 'disk'), { recursive: true, mode: 0o755 });
      cpSync(source, join(tmp, 'disk', basename(source)), { dereference: true });
    }
    rmSync(dir, { recursive: true, force: true });
    renameSync(tmp, dir);
    return { name, dir };
  }

  /** Removes image `name`; false when it was not there. */
  remove(name: string): boolean {
    checkImageName(name);
    if (!this.has(name)) return false;
    rmSync(this.dirOf(name), { recursive: true, force: true });
    return true;
  }

  /** The store's images by directory name (the name is decoded from it). */
  list(): LocalImage[] {
    if (!existsSync(this.root)) return [];
    return readdirSync(this.root)
      .filter((d) => !d.includes('.importing-'))
      .map((d) => ({ name: decodeDirName(d), dir: join(this.root, d) }));
  }

  /** Throws {@link ImageNotFoundError} for the first image `obj` refers to that the store lacks. */
  checkReferences(obj: VirtualMachine | VirtualMachineInstance, path: string): void {
    for (const ref of imageReferences(obj)) {
      if (!this.has(ref.image)) throw new ImageNotFoundError(ref.image, `${path}.${ref.field}`, this.root);
    }
  }
}

/** Inverse of {@link imageDirName}. */
export function decodeDirName(dir: string): string {
  const name = Buffer.from(
    dir.replace(/_([0-9a-f]{2})/g, (_m, h: string) => String.fromCharCode(Number.parseInt(h, 16))),
    'latin1',
  ).toString('utf8');
  return imageDirName(name) === dir ? name : dir;
}

/** Every container image a VM (its template) or VMI refers to, with its field path. */
export function imageReferences(
  obj: VirtualMachine | VirtualMachineInstance,
): Array<{ image: string; field: string }> {
  const isVm = obj.kind === 'VirtualMachine';
  const spec = isVm ? (obj as VirtualMachine).spec?.template?.spec : (obj as VirtualMachineInstance).spec;
  const prefix = isVm ? 'spec.template.spec' : 'spec';
  const out: Array<{ image: string; field: string }> = [];
  const kb = spec?.domain?.firmware?.kernelBoot?.container?.image;
  if (kb) out.push({ image: kb, field: `${prefix}.domain.firmware.kernelBoot.container.image` });
  (spec?.volumes ?? []).forEach((v, i) => {
    if (v.containerDisk?.image)
      out.push({ image: v.containerDisk.image, field: `${prefix}.volumes[${i}].containerDisk.image` });
  });
  return out;
}
