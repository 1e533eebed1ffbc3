/**
 * Config volumes as disks (upstream pkg/config): the files of a configMap, secret,
 * downwardAPI, serviceAccount or sysprep volume, as the pod's volume mount holds them,
 * packed into an ISO image the domain attaches. The label is the volume's `volumeLabel`,
 * else `cfgdata` (sysprep: `unattendCD`). Kubelet's bookkeeping entries (`..data`,
 * `..<timestamp>`) stay out of the image: the guest sees each key once, as a file.
 */
import { lstat, readdir, readFile, stat } from 'node:fs/promises';
import { join } from 'node:path';
import type { VirtualMachineInstance, Volume } from '../../api';
import { type ConfigVolumeKind, type ConverterPaths, volumePaths } from '../../converter';
import { buildIso, type IsoContents } from '../../converter/iso';
import type { PathMap } from '../common/path-map';
import { configSourceDir } from './volume-sources';

const LABEL = /^[A-Za-z0-9][A-Za-z0-9_-]{0,31}$/;
const NAME = /^[A-Za-z0-9._-]+$/;
/** Upstream: "Assuming windows does not care what's the exact label." */
export const SYSPREP_LABEL = 'unattendCD';
/** Nesting depth of item paths the launcher follows (kubelet allows deeper; no config disk needs it). */
const MAX_DEPTH = 8;

/** The config kind of a volume, or undefined for other volumes. */
export function configVolumeKind(vol: Volume): ConfigVolumeKind | undefined {
  for (const kind of ['configMap', 'secret', 'downwardAPI', 'serviceAccount', 'sysprep'] as const) {
    if (vol[kind]) return kind;
  }
  return undefined;
}

/**
 * Reads a mounted volume directory into ISO files (relative path -> bytes), following
 * kubelet's links and skipping its `..`-prefixed entries. Names must be plain file names.
 */
export async function readVolumeFiles(dir: string, field: string): Promise<Record<string, Buffer>> {
  const files: Record<string, Buffer> = {};
  const walk = async (d: string, prefix: string, depth: number): Promise<void> => {
    if (depth > MAX_DEPTH)
      throw new Error(`${field}: ${prefix} is nested deeper than ${MAX_DEPTH} directories`);
    for (const name of (await readdir(d)).sort()) {
      if (name.startsWith('..')) continue;
      const rel = prefix ? `${prefix}/${name}` : name;
      if (!NAME.test(name) || name === '.')
        throw new Error(`${field}: ${JSON.stringify(rel)} cannot be a file name on the config disk`);
      const st = await stat(join(d, name));
      if (st.isDirectory()) await walk(join(d, name), rel, depth + 1);
      else if (st.isFile()) files[rel] = await readFile(join(d, name));
    }
  };
  await walk(dir, '', 0);
  return files;
}

function label(vol: Volume, kind: ConfigVolumeKind, field: string): string {
  if (kind === 'sysprep') return SYSPREP_LABEL;
  const l =
    (kind === 'configMap'
      ? vol.configMap?.volumeLabel
      : kind === 'secret'
        ? vol.secret?.volumeLabel
        : kind === 'downwardAPI'
          ? vol.downwardAPI?.volumeLabel
          : undefined) || 'cfgdata';
  if (!LABEL.test(l))
    throw new Error(
      `${field}.${kind}.volumeLabel: ${JSON.stringify(l)} must be 1 to 32 letters, digits, "_" or "-", starting with a letter or digit`,
    );
  return l;
}

/** The ISO contents of config volume `i`, read from its mount. */
export async function configDiskContents(
  vmi: VirtualMachineInstance,
  i: number,
  map: PathMap,
): Promise<IsoContents> {
  const vol = vmi.spec.volumes![i];
  const field = `spec.volumes[${i}]`;
  const kind = configVolumeKind(vol);
  if (!kind) throw new Error(`${field}: is not a config volume`);
  const source = configSourceDir(kind, vol.name);
  const dir = map.toHost(source);
  // With a path map (local pod runtime) a path no mount covers is the host's own: never read it.
  const mounts = map.entries();
  const covered =
    mounts.length === 0 || mounts.some(([from]) => source === from || source.startsWith(`${from}/`));
  const st = covered ? await lstat(dir).catch(() => undefined) : undefined;
  if (!st)
    throw new Error(
      `${field}.${kind}: volume '${vol.name}' is not mounted in the launcher pod (${source}, host ${dir})`,
    );
  const files = await readVolumeFiles(dir, `${field}.${kind}`);
  if (kind === 'sysprep') {
    const names = Object.keys(files).map((n) => n.toLowerCase());
    if (!names.includes('autounattend.xml') && !names.includes('unattend.xml'))
      throw new Error(`${field}.sysprep: the volume holds neither autounattend.xml nor unattend.xml`);
  }
  return { label: label(vol, kind, field), files };
}

/**
 * Builds the ISO of config volume `i` unless it exists, when a disk uses the volume
 * (as upstream, volumes no disk names get no image); returns the file when built now.
 */
export async function prepareConfigDisk(
  vmi: VirtualMachineInstance,
  i: number,
  paths: ConverterPaths,
  map: PathMap,
  xorriso?: string,
): Promise<string | undefined> {
  const vol = vmi.spec.volumes![i];
  const kind = configVolumeKind(vol);
  if (!kind) return undefined;
  if (!(vmi.spec.domain.devices.disks ?? []).some((d) => d.name === vol.name)) return undefined;
  const file = volumePaths.configDisk(paths, kind, vol.name);
  if (await lstat(file).catch(() => undefined)) return undefined;
  await buildIso(await configDiskContents(vmi, i, map), file, { xorriso });
  return file;
}
