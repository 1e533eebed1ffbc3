/**
 * The export server's manifests (upstream's vmHandler and secretHandler): `manifests/all`
 * is a v1 List of the CA ConfigMap, the exported VM (its dataVolumeTemplates' http
 * sources pointing at this server's `disk.img.gz` URLs, with the CA ConfigMap and the
 * header Secret) and a DataVolume for each other claim of the VM; `manifests/secret` is
 * the Secret holding the token as the header CDI sends (`x-kubevirt-export-token:<token>`).
 * JSON, or YAML when the request accepts `application/yaml`. Read from the ConfigMap the
 * controller mounts at /manifest_data: under `/internal` with the Service's host, under
 * `/external` with the export proxy's external base when the ConfigMap has one.
 */
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { stringify } from 'yaml';
import type { ExportVolumePaths } from '../common/export-paths';
import { EXPORT_TOKEN_HEADER, ManifestKeys } from '../common/export-paths';

type Obj = Record<string, unknown> & { metadata?: { name?: string } };

/** The header Secret's name (upstream's getSecretTokenName). */
export const headerSecretName = (exportName: string) => `header-secret-${exportName}`;

async function readData(dir: string, key: string): Promise<string> {
  return (await readFile(join(dir, key), 'utf8')).trim();
}

async function readOptional(dir: string, key: string): Promise<string | undefined> {
  try {
    return await readData(dir, key);
  } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw e;
  }
}

/** The URL of the gzip'd image of claim `claim` (or its restore `<export>-<claim>`), at `host`. */
function gzUrl(
  host: string,
  volumes: ExportVolumePaths[],
  claim: string,
  exportName: string,
): string | undefined {
  const v =
    volumes.find((x) => x.rawGzUri?.startsWith(`/volumes/${claim}/`)) ??
    volumes.find((x) => x.rawGzUri?.startsWith(`/volumes/${exportName}-${claim}/`));
  return v?.rawGzUri ? `https://${host}${v.rawGzUri}` : undefined;
}

/** The ConfigMap keys of each kind of link: the host (and base path) and the CA ConfigMap. */
const LINK_KEYS = {
  internal: { host: ManifestKeys.internalHost, ca: ManifestKeys.internalCa },
  external: { host: ManifestKeys.externalHost, ca: ManifestKeys.externalCa },
} as const;

/** Whether the ConfigMap has an external host (an Ingress led to the export proxy). */
export async function hasExternalHost(dir: string): Promise<boolean> {
  return (await readOptional(dir, ManifestKeys.externalHost)) !== undefined;
}

/**
 * The objects of `manifests/all`, their URLs on the internal host or (`external`) the
 * export proxy's external base (upstream's getInternalBasePath / getExternalBasePath).
 */
export async function allManifests(
  dir: string,
  volumes: ExportVolumePaths[],
  kind: 'internal' | 'external' = 'internal',
): Promise<Obj[]> {
  const exportName = await readData(dir, ManifestKeys.exportName);
  const host = await readData(dir, LINK_KEYS[kind].host);
  const ca = JSON.parse(await readData(dir, LINK_KEYS[kind].ca)) as Obj;
  const vm = JSON.parse(await readData(dir, ManifestKeys.vm)) as Obj & {
    spec?: { dataVolumeTemplates?: Array<{ metadata?: { name?: string }; spec?: { source?: unknown } }> };
  };
  const caName = ca.metadata?.name ?? '';
  const http = (claim: string) => ({
    http: {
      url: gzUrl(host, volumes, claim, exportName) ?? '',
      certConfigMap: caName,
      secretExtraHeaders: [headerSecretName(exportName)],
    },
  });
  for (const t of vm.spec?.dataVolumeTemplates ?? [])
    if (t.spec && t.metadata?.name) t.spec.source = http(t.metadata.name);
  const out: Obj[] = [
    { apiVersion: 'v1', kind: 'ConfigMap', ...ca },
    { apiVersion: 'kubevirt.io/v1', kind: 'VirtualMachine', ...vm },
  ];
  for (const v of volumes) {
    const claim = v.rawGzUri?.split('/')[2];
    if (!claim) continue;
    const raw = await readOptional(dir, `dv-${claim}`);
    if (!raw) continue;
    const dv = JSON.parse(raw) as Obj & { spec?: { source?: unknown } };
    out.push({
      apiVersion: 'cdi.kubevirt.io/v1beta1',
      kind: 'DataVolume',
      ...dv,
      spec: { ...dv.spec, source: http(claim) },
    });
  }
  return out;
}

/** The objects of `manifests/secret`. */
export async function secretManifests(dir: string, token: string): Promise<Obj[]> {
  const exportName = await readData(dir, ManifestKeys.exportName);
  return [
    {
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: { name: headerSecretName(exportName) },
      stringData: { token: `${EXPORT_TOKEN_HEADER}:${token}` },
    },
  ];
}

/**
 * `items` as upstream's server writes them: a v1 List in JSON, or, when YAML is asked, each
 * object as its own document ended by `---` (not a List): `virtctl vmexport download
 * --manifest --include-secret` prints two answers one after the other, and only documents
 * that end in a separator make one stream `kubectl apply -f` reads whole.
 */
export function renderList(items: Obj[], yaml: boolean): { body: string; contentType: string } {
  if (yaml)
    return { body: items.map((i) => `${stringify(i)}---\n`).join(''), contentType: 'application/yaml' };
  const list = { apiVersion: 'v1', kind: 'List', metadata: {}, items };
  return { body: `${JSON.stringify(list, null, 4)}\n`, contentType: 'application/json' };
}
