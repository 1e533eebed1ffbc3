/**
 * Creates the files a VMI's domain points at before the launcher defines it: for each
 * containerDisk volume, the backing file (`<containerDiskDir>/disk_<i>.img`, a symlink to
 * the disk in the local image store, or the copy the pod's `volume<name>` container makes
 * there: container-disk-wait.ts) and its qcow2 overlay (`qemu-img create`); for each
 * cloud-init volume, its ISO image (secretRef data read from the mounted secret, and the
 * SSH keys of the VMI's noCloud/configDrive accessCredentials in its meta-data, read from
 * their mounted Secrets: access-credential-keys.ts); for each emptyDisk a fresh qcow2
 * (empty-disk.ts); for each hostDisk a check or a sparse file (host-disk.ts); for each config volume a disk uses, its ISO image (config-disk.ts); for
 * each filesystem PVC or DataVolume, its disk.img checked or created, and for each block
 * one, its device checked (pvc-disk.ts).
 * Idempotent: what exists already (a restarted launcher in the same pod) is never
 * recreated, so the guest keeps its writes.
 */
import { execFile } from 'node:child_process';
import { lstat, mkdir, readdir, readFile, readlink, rename, rm, stat, symlink } from 'node:fs/promises';
import { dirname, isAbsolute, join, normalize, relative } from 'node:path';
import { promisify } from 'node:util';
import type { VirtualMachineInstance } from '../../api';
import { type ConverterPaths, volumePaths } from '../../converter';
import { buildIso, isoContents, type ResolvedVolumeData } from '../../converter/iso';
import { PathMap } from '../common/path-map';
import { readSshPublicKeys } from './access-credential-keys';
import { configVolumeKind, prepareConfigDisk } from './config-disk';
import { waitForContainerDiskCopy } from './container-disk-wait';
import { prepareEmptyDisk } from './empty-disk';
import { prepareHostDisk } from './host-disk';
import { imageDir } from './image-dirs';
import { type PvcDiskLimits, preparePvcDisk } from './pvc-disk';
import { cloudInitSecretDir } from './volume-sources';

const run = promisify(execFile);
/** Kubernetes volume names (DNS labels), checked again here because they become path segments. */
const VOLUME_NAME = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

/** Image formats a backing file may have. */
export type BackingFormat = 'raw' | 'qcow2';

/** Options of {@link VolumePreparer}. */
export interface VolumePreparerOptions {
  /** The launcher's converter paths (host paths). */
  paths: ConverterPaths;
  /** Root of the local image store; containerDisk volumes need it. */
  imageRoot?: string;
  /** The qemu-img binary (default `qemu-img` from PATH). */
  qemuImg?: string;
  /** The xorriso binary (default `xorriso` from PATH). */
  xorriso?: string;
  /** The pod's mounts (config volumes, cloud-init secrets, host disks); default identity. */
  pathMap?: PathMap;
  /** How long one prepare waits for a kubelet pod's containerDisk copy (default 20 s). */
  containerDiskWaitMs?: number;
  /** How a filesystem claim's new disk.img is sized against its room (default upstream's). */
  pvcLimits?: PvcDiskLimits;
}

/** What {@link VolumePreparer.prepare} did, for logs and tests. */
export interface PreparedVolumes {
  /** Files created by this call (overlays, ISO images). */
  created: string[];
}

async function exists(p: string): Promise<boolean> {
  try {
    await lstat(p);
    return true;
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return false;
    throw e;
  }
}

/**
 * Prepares the volumes of one launcher's VMI. {@link backingFormats} is filled as
 * containerDisk volumes are resolved; the launcher's converter context reads it, so the
 * domain's `<backingStore><format>` matches the overlay's backing format.
 */
export class VolumePreparer {
  /** Detected format of each containerDisk backing file, by volume name. */
  readonly backingFormats: Record<string, BackingFormat> = {};
  /** Volumes that are block devices (`/dev/<volume>`), filled as claims are checked; the converter reads it. */
  readonly blockVolumes = new Set<string>();

  private readonly map: PathMap;

  constructor(private readonly opts: VolumePreparerOptions) {
    this.map = opts.pathMap ?? new PathMap();
  }

  /** Creates the missing backing links, overlays and ISO images of `vmi`. */
  async prepare(vmi: VirtualMachineInstance): Promise<PreparedVolumes> {
    const created: string[] = [];
    const subject = `VirtualMachineInstance ${vmi.metadata?.namespace || 'default'}/${vmi.metadata?.name}`;
    const volumes = vmi.spec?.volumes ?? [];
    for (let i = 0; i < volumes.length; i++) {
      const vol = volumes[i];
      const field = `spec.volumes[${i}]`;
      try {
        const names =
          vol.containerDisk ||
          vol.emptyDisk ||
          vol.hostDisk ||
          vol.persistentVolumeClaim ||
          vol.dataVolume ||
          configVolumeKind(vol);
        if (names && !VOLUME_NAME.test(vol.name ?? ''))
          throw new Error(`${field}.name: '${vol.name}' must be a DNS label (it names a file or directory)`);
        let file: string | undefined;
        if (vol.containerDisk) {
          if (await this.containerDisk(vmi, i)) file = volumePaths.overlay(this.opts.paths, vol.name);
        } else if (vol.cloudInitNoCloud || vol.cloudInitConfigDrive) {
          file = await this.cloudInit(vmi, i);
        } else if (vol.emptyDisk) {
          file = await prepareEmptyDisk(vmi, i, this.opts.paths, this.opts.qemuImg);
        } else if (vol.hostDisk) {
          file = await prepareHostDisk(vmi, i, this.map);
        } else if (
          (vol.persistentVolumeClaim && !vol.persistentVolumeClaim.hotpluggable) ||
          (vol.dataVolume && !vol.dataVolume.hotpluggable)
        ) {
          const pvc = await preparePvcDisk(vmi, i, this.map, this.opts.pvcLimits);
          if (pvc.block) this.blockVolumes.add(vol.name);
          else this.blockVolumes.delete(vol.name);
          file = pvc.created;
        } else if (configVolumeKind(vol)) {
          file = await prepareConfigDisk(vmi, i, this.opts.paths, this.map, this.opts.xorriso);
        }
        if (file) created.push(file);
      } catch (e) {
        const msg = (e as Error).message;
        // Messages from the helpers below start with the field path already.
        throw new Error(`${subject}: ${msg.startsWith('spec.') ? msg : `${field}: ${msg}`}`, { cause: e });
      }
    }
    return { created };
  }

  /** Resolves the disk file of containerDisk volume `i` in the image store. */
  async containerDiskFile(vmi: VirtualMachineInstance, i: number): Promise<string> {
    const cd = vmi.spec.volumes![i].containerDisk!;
    const field = `spec.volumes[${i}].containerDisk`;
    if (!cd.image) throw new Error(`${field}.image: is empty`);
    if (!this.opts.imageRoot)
      throw new Error(
        `${field}.image: '${cd.image}': no local image store (KUBEVIRT_TS_IMAGE_ROOT is not set)`,
      );
    const dir = imageDir(this.opts.imageRoot, cd.image);
    if (!(await exists(dir)))
      throw new Error(`${field}.image: '${cd.image}' is not in the local image store (${dir})`);
    if (cd.path) {
      // Upstream: an absolute path inside the image. It must stay inside the image.
      const file = join(dir, normalize(`/${cd.path}`));
      const rel = relative(dir, file);
      if (!rel || rel.startsWith('..') || isAbsolute(rel))
        throw new Error(`${field}.path: '${cd.path}' is not a file inside the image`);
      const st = await stat(file).catch(() => undefined);
      if (!st?.isFile()) throw new Error(`${field}.path: '${cd.path}' is not a file in image '${cd.image}'`);
      return file;
    }
    const diskDir = join(dir, 'disk');
    const names = await readdir(diskDir).catch(() => [] as string[]);
    const regular: string[] = [];
    for (const n of names) {
      // Follows symlinks: a store may link an image's disk to a shared file.
      if ((await stat(join(diskDir, n)).catch(() => undefined))?.isFile()) regular.push(n);
    }
    if (regular.length !== 1)
      throw new Error(
        `${field}.image: '${cd.image}' must hold exactly one file under /disk/ (found ${regular.length}); or set ${field}.path`,
      );
    return join(diskDir, regular[0]);
  }

  /** Detects a backing file's format; refuses formats other than raw/qcow2 and nested backing files. */
  async detectFormat(file: string, field: string): Promise<BackingFormat> {
    let info: { format?: string; 'backing-filename'?: string };
    try {
      const { stdout } = await run(this.opts.qemuImg ?? 'qemu-img', ['info', '--output=json', file]);
      info = JSON.parse(stdout);
    } catch (e) {
      throw new Error(`${field}: cannot read disk image ${file}: ${(e as Error).message.trim()}`);
    }
    if (info.format !== 'raw' && info.format !== 'qcow2')
      throw new Error(`${field}: disk image ${file} has format '${info.format}' (want raw or qcow2)`);
    // A qcow2 naming its own backing file could make QEMU open any host file.
    if (info['backing-filename'])
      throw new Error(`${field}: disk image ${file} has a backing file of its own; flatten it first`);
    return info.format;
  }

  /** Links the backing file and creates the overlay; true when the overlay was created now. */
  private async containerDisk(vmi: VirtualMachineInstance, i: number): Promise<boolean> {
    const vol = vmi.spec.volumes![i];
    const field = `spec.volumes[${i}].containerDisk.image`;
    // Re-syncs of a prepared volume cost no qemu-img run.
    const overlayPath = volumePaths.overlay(this.opts.paths, vol.name);
    if (this.backingFormats[vol.name] && (await exists(overlayPath))) return false;
    const backing = volumePaths.containerDiskBacking(this.opts.paths, i);
    // On a kubelet node the pod's volume container copies the image's disk to the backing
    // file itself (virt-controller container-disk-containers.ts): a regular file, no link.
    const copied = !this.opts.imageRoot;
    if (copied) {
      await waitForContainerDiskCopy(backing, `volume${vol.name}`, this.opts.containerDiskWaitMs).catch(
        (e) => {
          throw new Error(`${field}: ${(e as Error).message}`);
        },
      );
    }
    const source = copied ? backing : await this.containerDiskFile(vmi, i);
    this.backingFormats[vol.name] = await this.detectFormat(source, field);
    const overlay = volumePaths.overlay(this.opts.paths, vol.name);
    for (const p of [backing, overlay]) {
      if (!isAbsolute(p) || normalize(p) !== p)
        throw new Error(`${field}: launcher path ${p} is not absolute`);
    }
    await mkdir(dirname(backing), { recursive: true });
    const current = copied ? source : await readlink(backing).catch(() => undefined);
    if (current !== source) {
      if (await exists(overlay)) {
        // The overlay is kept (idempotent); its backing link must already be what it was made on.
        if (current === undefined && !(await exists(backing)))
          throw new Error(`${field}: overlay ${overlay} exists but its backing file ${backing} is gone`);
      } else {
        const tmp = `${backing}.tmp-${process.pid}`;
        await rm(tmp, { force: true });
        await symlink(source, tmp);
        await rename(tmp, backing);
      }
    }
    if (await exists(overlay)) return false;
    await mkdir(dirname(overlay), { recursive: true });
    const tmp = `${overlay}.tmp-${process.pid}`;
    await rm(tmp, { force: true });
    try {
      await run(this.opts.qemuImg ?? 'qemu-img', [
        'create',
        '-q',
        '-f',
        'qcow2',
        '-F',
        this.backingFormats[vol.name],
        '-b',
        backing,
        tmp,
      ]);
    } catch (e) {
      await rm(tmp, { force: true });
      throw new Error(`${field}: qemu-img create ${overlay}: ${(e as Error).message.trim()}`);
    }
    await rename(tmp, overlay);
    return true;
  }

  /** Builds the ISO of cloud-init volume `i` unless it exists; returns its path when built. */
  private async cloudInit(vmi: VirtualMachineInstance, i: number): Promise<string | undefined> {
    const vol = vmi.spec.volumes![i];
    const kind = vol.cloudInitNoCloud ? 'noCloud' : 'configDrive';
    const file = volumePaths.cloudInit(
      this.opts.paths,
      vmi.metadata?.namespace || 'default',
      vmi.metadata?.name ?? '',
      kind,
    );
    if (await exists(file)) return undefined;
    const resolved = await this.cloudInitSecrets(vmi, i);
    resolved.sshPublicKeys = await readSshPublicKeys(vmi, kind, this.map);
    const contents = isoContents(vmi, i, resolved);
    if (!contents) return undefined;
    await buildIso(contents, file, { xorriso: this.opts.xorriso });
    return file;
  }

  /**
   * The keys of a cloud-init volume's userDataSecretRef / networkDataSecretRef, read where
   * the pod mounts them (upstream: `<secret dir>/<volume>/userdata` or `userData`, and
   * `networkdata` or `networkData`).
   */
  private async cloudInitSecrets(vmi: VirtualMachineInstance, i: number): Promise<ResolvedVolumeData> {
    const vol = vmi.spec.volumes![i];
    const src = vol.cloudInitNoCloud ?? vol.cloudInitConfigDrive;
    if (!src?.secretRef && !src?.networkDataSecretRef) return {};
    if (!VOLUME_NAME.test(vol.name ?? ''))
      throw new Error(`spec.volumes[${i}].name: '${vol.name}' must be a DNS label (it names a directory)`);
    const dir = cloudInitSecretDir(vol.name);
    const read = async (keys: string[]): Promise<Record<string, Buffer>> => {
      const out: Record<string, Buffer> = {};
      for (const key of keys) {
        const file = this.map.toHost(`${dir}/${key}`);
        const st = await stat(file).catch(() => undefined);
        if (st?.isFile()) out[key] = await readFile(file);
      }
      return out;
    };
    return {
      data: src.secretRef ? await read(['userdata', 'userData']) : undefined,
      networkData: src.networkDataSecretRef ? await read(['networkdata', 'networkData']) : undefined,
    };
  }
}
