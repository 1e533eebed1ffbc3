/**
 * What kubevirt-ts accepts of a DataVolume's spec (CDI's webhook rules where they apply,
 * plus the refusal of what is not built yet): the DataVolume controller fails a
 * DataVolume that breaks them, with the field path and reason in its condition and event,
 * rather than accept a source and ignore it.
 */
import { type FieldError, FieldPath, fieldError } from '../errors';
import type { DataVolume, DataVolumeSource, DataVolumeSourceRegistry } from '../generated/cdi/types';
import { validateUnsupportedDataVolumeFields } from '../validation/unsupported-fields';
import { checksumProblem } from './checksum';

/** Sources the importer handles today. */
export const SUPPORTED_SOURCES = ['http', 'blank', 'registry', 'upload', 'pvc', 'snapshot'] as const;

/** Why each known but unbuilt source is refused. */
export const REFUSED_SOURCES: Readonly<Record<string, string>> = {
  s3: 'S3 sources are not supported (no outside network here)',
  gcs: 'GCS sources are not supported (no outside network here)',
  vddk: 'VDDK (VMware) sources are not supported',
  imageio: 'oVirt imageio sources are not supported',
};

/**
 * An image reference as the container runtime takes it: host[:port]/path[:tag][@digest],
 * lower-case path components. Anything else (spaces, shell or YAML syntax) never reaches
 * the importer pod's spec.
 */
const IMAGE_REFERENCE =
  /^[a-z0-9]([a-z0-9.-]*[a-z0-9])?(:[0-9]{1,5})?(\/[a-z0-9]+([._-]+[a-z0-9]+)*)*(:[A-Za-z0-9_][A-Za-z0-9_.-]{0,127})?(@sha256:[a-f0-9]{64})?$/;

/** The registry fields the node's container runtime cannot honour, and why. */
const REFUSED_REGISTRY_FIELDS: Readonly<Record<string, string>> = {
  secretRef:
    "registry credentials are not supported: the image is pulled by the node's container runtime (use the node's pull configuration)",
  certConfigMap:
    "registry certificates are not supported: the image is pulled by the node's container runtime (use the node's registry configuration)",
  imageStream: 'imageStream (OpenShift image streams) is not supported',
  platform: 'platform selection is not supported: the node pulls the image for its own architecture',
};

/**
 * A registry source: a containerDisk image the node's container runtime provides (CDI's
 * `pullMethod: node`; the default `pod` goes the same way, since the importer has no
 * registry client and no registry is reachable here).
 */
function validateRegistry(p: FieldPath, reg: DataVolumeSourceRegistry): FieldError[] {
  const errs: FieldError[] = [];
  const url = reg.url ?? '';
  if (!url) errs.push(fieldError(p.child('url'), 'Required value: the image URL', 'FieldValueRequired'));
  else if (!url.startsWith('docker://'))
    errs.push(
      fieldError(
        p.child('url'),
        `${JSON.stringify(url)}: only docker:// image references are supported (oci-archive:// is not)`,
        'FieldValueNotSupported',
      ),
    );
  else if (!IMAGE_REFERENCE.test(url.slice('docker://'.length)))
    errs.push(fieldError(p.child('url'), `${JSON.stringify(url)} is not a valid image reference`));
  if (reg.pullMethod !== undefined && reg.pullMethod !== 'node' && reg.pullMethod !== 'pod')
    errs.push(
      fieldError(
        p.child('pullMethod'),
        `${JSON.stringify(reg.pullMethod)} is not pod or node`,
        'FieldValueNotSupported',
      ),
    );
  for (const [field, why] of Object.entries(REFUSED_REGISTRY_FIELDS))
    if (reg[field as keyof DataVolumeSourceRegistry] !== undefined)
      errs.push(fieldError(p.child(field), why, 'FieldValueNotSupported'));
  return errs;
}

/** The image a `docker://` registry URL names, as a pod's `image`. */
export function registryImage(url: string): string {
  return url.slice('docker://'.length);
}

/**
 * A clone source (`pvc`, `snapshot`): a name, and the DataVolume's own namespace. Cloning
 * from another namespace is refused: CDI does it by provisioning in the source namespace and
 * rebinding the volume, behind an authorization check (`datavolumes/source` in the source
 * namespace) that is not built here.
 */
function validateCloneSource(
  p: FieldPath,
  ref: { name?: string; namespace?: string },
  dvNamespace: string | undefined,
  what: string,
): FieldError[] {
  const errs: FieldError[] = [];
  if (!ref.name)
    errs.push(fieldError(p.child('name'), `Required value: the source ${what}'s name`, 'FieldValueRequired'));
  if (ref.namespace && dvNamespace && ref.namespace !== dvNamespace)
    errs.push(crossNamespace(p.child('namespace'), ref.namespace, dvNamespace));
  return errs;
}

function crossNamespace(p: FieldPath, from: string, into: string): FieldError {
  return fieldError(
    p,
    `cloning from namespace ${from} into ${into} is not supported: the source must be in the DataVolume's namespace`,
    'FieldValueNotSupported',
  );
}

function validateSource(p: FieldPath, source: DataVolumeSource, dvNamespace?: string): FieldError[] {
  const set = Object.entries(source).filter(([, v]) => v !== undefined && v !== null);
  if (set.length === 0) return [fieldError(p, 'Missing dataVolume valid source', 'FieldValueRequired')];
  if (set.length > 1) return [fieldError(p, 'Multiple dataVolume sources', 'FieldValueInvalid')];
  const [kind] = set[0];
  if (REFUSED_SOURCES[kind])
    return [fieldError(p.child(kind), REFUSED_SOURCES[kind], 'FieldValueNotSupported')];
  if (kind === 'registry') return validateRegistry(p.child('registry'), source.registry!);
  if (kind === 'pvc') return validateCloneSource(p.child('pvc'), source.pvc!, dvNamespace, 'PVC');
  if (kind === 'snapshot')
    return validateCloneSource(p.child('snapshot'), source.snapshot!, dvNamespace, 'VolumeSnapshot');
  if (kind !== 'http') return [];
  const http = source.http!;
  const errs: FieldError[] = [];
  let url: URL | undefined;
  try {
    url = new URL(http.url);
  } catch {
    errs.push(fieldError(p.child('http', 'url'), `${JSON.stringify(http.url)} is not a valid URL`));
  }
  if (url && url.protocol !== 'http:' && url.protocol !== 'https:')
    errs.push(fieldError(p.child('http', 'url'), `scheme ${url.protocol} is not http or https`));
  const sumProblem = http.checksum !== undefined ? checksumProblem(http.checksum) : undefined;
  if (sumProblem) errs.push(fieldError(p.child('http', 'checksum'), sumProblem));
  if (http.insecureSkipVerify)
    errs.push(
      fieldError(
        p.child('http', 'insecureSkipVerify'),
        "skipping TLS verification is not supported: give the server's CA with certConfigMap",
        'FieldValueNotSupported',
      ),
    );
  for (const [i, name] of (http.secretExtraHeaders ?? []).entries())
    if (!/^[a-z0-9]([-a-z0-9.]{0,251}[a-z0-9])?$/.test(name))
      errs.push(
        fieldError(
          p.child('http', 'secretExtraHeaders').index(i),
          `${JSON.stringify(name)} is not a Secret name (a DNS-1123 subdomain)`,
        ),
      );
  for (const [i, h] of (http.extraHeaders ?? []).entries())
    if (!/^[A-Za-z0-9-]+:[^\r\n]*$/.test(h))
      errs.push(
        fieldError(p.child('http', 'extraHeaders').index(i), `${JSON.stringify(h)} is not "Name: value"`),
      );
  return errs;
}

/** The DataVolume's problems; empty when the controller can carry it out. */
export function validateDataVolume(dv: DataVolume): FieldError[] {
  const spec = FieldPath.of('spec');
  const s = dv.spec ?? {};
  const errs: FieldError[] = [];
  if (!s.pvc && !s.storage)
    errs.push(fieldError(spec.child('storage'), 'Missing Data volume PVC or Storage', 'FieldValueRequired'));
  if (s.pvc && s.storage)
    errs.push(
      fieldError(
        spec.child('storage'),
        'Duplicate storage definition, both target storage and target pvc defined',
      ),
    );
  const ns = dv.metadata?.namespace;
  if (s.sourceRef) {
    const rp = spec.child('sourceRef');
    if (s.source)
      errs.push(fieldError(spec.child('source'), 'Data volume should have either Source or SourceRef'));
    if (s.sourceRef.kind !== 'DataSource')
      errs.push(
        fieldError(
          rp.child('kind'),
          `Unsupported sourceRef kind ${JSON.stringify(s.sourceRef.kind ?? '')}: only DataSource`,
          'FieldValueNotSupported',
        ),
      );
    if (!s.sourceRef.name)
      errs.push(fieldError(rp.child('name'), "Required value: the DataSource's name", 'FieldValueRequired'));
  }
  if (!s.source && !s.sourceRef)
    errs.push(fieldError(spec.child('source'), 'Missing dataVolume valid source', 'FieldValueRequired'));
  if (s.source && !s.sourceRef) errs.push(...validateSource(spec.child('source'), s.source, ns));
  if (s.contentType === 'archive')
    errs.push(
      fieldError(
        spec.child('contentType'),
        'contentType archive is not supported yet',
        'FieldValueNotSupported',
      ),
    );
  else if (s.contentType !== undefined && s.contentType !== '' && s.contentType !== 'kubevirt')
    errs.push(
      fieldError(
        spec.child('contentType'),
        `${JSON.stringify(s.contentType)} is not kubevirt or archive`,
        'FieldValueNotSupported',
      ),
    );
  if (s.checkpoints?.length)
    errs.push(
      fieldError(
        spec.child('checkpoints'),
        'multi-stage (checkpoint) imports are not supported',
        'FieldValueNotSupported',
      ),
    );
  if (s.finalCheckpoint)
    errs.push(
      fieldError(
        spec.child('finalCheckpoint'),
        'multi-stage (checkpoint) imports are not supported',
        'FieldValueNotSupported',
      ),
    );
  if (s.preallocation)
    errs.push(
      fieldError(spec.child('preallocation'), 'preallocation is not supported yet', 'FieldValueNotSupported'),
    );
  const target = s.pvc ?? s.storage;
  const tp = spec.child(s.pvc ? 'pvc' : 'storage');
  for (const ref of ['dataSource', 'dataSourceRef'] as const)
    if (target?.[ref])
      errs.push(
        fieldError(tp.child(ref), 'external population is not supported yet', 'FieldValueNotSupported'),
      );
  if (s.pvc && !s.pvc.resources?.requests?.storage)
    errs.push(
      fieldError(
        tp.child('resources', 'requests', 'storage'),
        'Required value: the PVC size',
        'FieldValueRequired',
      ),
    );
  errs.push(...validateUnsupportedDataVolumeFields(spec, s));
  return errs;
}
