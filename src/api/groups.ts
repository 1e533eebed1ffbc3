/**
 * The group/version/kind registry of the KubeVirt API groups: for every kind, its
 * resource names, scope, served versions, subresources and printer columns, as upstream
 * KubeVirt registers them (pkg/virt-operator/resource/generate/components/crds.go).
 * The CRD generator and the manifest loader both read it. The types are ./kind-info, the
 * table ./kind-table; this module looks kinds up.
 */
import type { KindInfo, ServedVersion } from './kind-info';
import { kinds } from './kind-table';

export type {
  KindInfo,
  KnownKind,
  KnownKinds,
  KnownObject,
  PrinterColumn,
  ScaleSubresource,
  ServedVersion,
} from './kind-info';
export { KUBEVIRT_GROUP, kinds } from './kind-table';

/** Splits `group/version` (or core `v1`) into its parts. */
export function parseApiVersion(apiVersion: string): { group: string; version: string } {
  const slash = apiVersion.indexOf('/');
  return slash < 0
    ? { group: '', version: apiVersion }
    : { group: apiVersion.slice(0, slash), version: apiVersion.slice(slash + 1) };
}

/** The `apiVersion` objects of this kind are converted to (its schema version). */
export function apiVersionOf(info: KindInfo): string {
  return `${info.group}/${info.version}`;
}

/** The kind registered under `kind` in `group`, whatever the version. */
export function findKind(group: string, kind: string): KindInfo | undefined {
  return kinds.find((k) => k.group === group && k.kind === kind);
}

/** The kind for an object's `apiVersion` and `kind`, only if that version is served. */
export function lookupKind(
  apiVersion: string,
  kind: string,
): { info: KindInfo; version: ServedVersion } | undefined {
  const { group, version } = parseApiVersion(apiVersion);
  const info = findKind(group, kind);
  const served = info?.versions.find((v) => v.name === version && v.served);
  return info && served ? { info, version: served } : undefined;
}

/** The kind a resource name refers to: plural, singular, short name or kind (case-insensitive). */
export function kindForResource(resource: string): KindInfo | undefined {
  const r = resource.toLowerCase();
  return kinds.find(
    (k) => k.plural === r || k.singular === r || k.kind.toLowerCase() === r || k.shortNames.includes(r),
  );
}
