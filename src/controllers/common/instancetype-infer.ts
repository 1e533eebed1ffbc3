/**
 * `inferFromVolume` (upstream pkg/instancetype/infer, run by the VM mutating webhook): a
 * matcher naming a volume instead of an object gets the instance type or preference from
 * the `instancetype.kubevirt.io/default-{instancetype,preference}[-kind]` labels of what
 * backs the volume: a PersistentVolumeClaim; a DataVolume (its labels, else its source: a
 * claim, a VolumeSnapshot or a DataSource), or the VM's DataVolumeTemplate of that name
 * (its source); a DataSource (its labels, else its source claim or snapshot). A DataVolume
 * already garbage collected is looked up as the claim of its name. With
 * `inferFromVolumeFailurePolicy: IgnoreInferFromVolumeFailure`, an unsupported volume or a
 * missing label drops the matcher instead of failing (and an inferred instance type drops
 * the template's `domain.memory`, as upstream).
 */
import { type FieldError, FieldPath, fieldError } from '../../api/errors';
import type { VirtualMachine } from '../../api/generated/types';
import { NotFoundError } from '../runtime/errors';
import { DataSourceType, DataVolumeType, PersistentVolumeClaimType } from '../runtime/resources';
import { VolumeSnapshotType } from '../runtime/storage-resources';
import type { KubeObject, ObjectClient, ResourceType } from '../runtime/types';

/** Upstream's labels naming a volume's default instance type and preference. */
export const InferLabels = {
  instancetype: 'instancetype.kubevirt.io/default-instancetype',
  instancetypeKind: 'instancetype.kubevirt.io/default-instancetype-kind',
  preference: 'instancetype.kubevirt.io/default-preference',
  preferenceKind: 'instancetype.kubevirt.io/default-preference-kind',
} as const;

/** A failure the matcher's IgnoreInferFromVolumeFailure policy may ignore (upstream's IgnoreableInferenceError). */
class Ignorable extends Error {}

type Which = 'instancetype' | 'preference';
type Source = {
  pvc?: { name?: string; namespace?: string };
  snapshot?: { name?: string; namespace?: string };
};
type DvSpec = { source?: Source; sourceRef?: { kind?: string; name?: string; namespace?: string } };

class Inferrer {
  constructor(
    private readonly client: ObjectClient,
    private readonly vm: VirtualMachine,
    private readonly which: Which,
  ) {}

  private get ns(): string {
    return this.vm.metadata?.namespace ?? 'default';
  }

  private fromLabels(o: KubeObject): { name: string; kind?: string } {
    const labels = o.metadata?.labels ?? {};
    const nameLabel = InferLabels[this.which];
    const name = labels[nameLabel];
    if (name === undefined) throw new Ignorable(`unable to find required ${nameLabel} label on the volume`);
    const kind =
      labels[this.which === 'instancetype' ? InferLabels.instancetypeKind : InferLabels.preferenceKind];
    return kind ? { name, kind } : { name };
  }

  private async labelsOf(type: ResourceType, name: string | undefined, namespace: string | undefined) {
    return this.fromLabels(await this.client.get<KubeObject>(type, name ?? '', namespace || this.ns));
  }

  async fromVolumes(volumeName: string): Promise<{ name: string; kind?: string }> {
    const volume = (this.vm.spec.template?.spec?.volumes ?? []).find((v) => v.name === volumeName);
    if (!volume) throw new Error(`unable to find volume ${volumeName} to infer defaults`);
    if (volume.persistentVolumeClaim)
      return this.labelsOf(PersistentVolumeClaimType, volume.persistentVolumeClaim.claimName, this.ns);
    if (volume.dataVolume) return this.fromDataVolume(volume.dataVolume.name ?? '');
    throw new Ignorable(`unable to infer defaults from volume ${volumeName} as type is not supported`);
  }

  private async fromDataVolume(name: string): Promise<{ name: string; kind?: string }> {
    const template = (this.vm.spec.dataVolumeTemplates ?? []).find((t) => t.metadata?.name === name);
    if (template) return this.fromDataVolumeSpec(template.spec as DvSpec);
    let dv: KubeObject & { spec?: DvSpec };
    try {
      dv = await this.client.get(DataVolumeType, name, this.ns);
    } catch (err) {
      // A garbage collected DataVolume: its claim has its name.
      if (err instanceof NotFoundError) return this.labelsOf(PersistentVolumeClaimType, name, this.ns);
      throw err;
    }
    try {
      return this.fromLabels(dv);
    } catch {
      return this.fromDataVolumeSpec(dv.spec);
    }
  }

  private async fromDataVolumeSpec(spec: DvSpec | undefined): Promise<{ name: string; kind?: string }> {
    if (spec?.source?.pvc)
      return this.labelsOf(PersistentVolumeClaimType, spec.source.pvc.name, spec.source.pvc.namespace);
    if (spec?.source?.snapshot)
      return this.labelsOf(VolumeSnapshotType, spec.source.snapshot.name, spec.source.snapshot.namespace);
    if (spec?.sourceRef) {
      if (spec.sourceRef.kind !== 'DataSource')
        throw new Ignorable(
          `unable to infer defaults from DataVolumeSourceRef as Kind ${spec.sourceRef.kind} is not supported`,
        );
      return this.fromDataSource(spec.sourceRef.name ?? '', spec.sourceRef.namespace || this.ns);
    }
    throw new Ignorable('unable to infer defaults from DataVolumeSpec as DataVolumeSource is not supported');
  }

  private async fromDataSource(name: string, namespace: string): Promise<{ name: string; kind?: string }> {
    const ds = await this.client.get<KubeObject & { spec?: { source?: Source } }>(
      DataSourceType,
      name,
      namespace,
    );
    try {
      return this.fromLabels(ds);
    } catch {
      const src = ds.spec?.source;
      if (src?.pvc) return this.labelsOf(PersistentVolumeClaimType, src.pvc.name, src.pvc.namespace);
      if (src?.snapshot) return this.labelsOf(VolumeSnapshotType, src.snapshot.name, src.snapshot.namespace);
      throw new Ignorable(
        "unable to infer defaults from DataSource that doesn't provide DataVolumeSourcePVC or DataVolumeSourceSnapshot",
      );
    }
  }
}

/**
 * Upstream's Infer: `vm` with each matcher that names `inferFromVolume` replaced by the
 * inferred name and kind (or dropped under the Ignore policy), or the failure (upstream's
 * message) at `spec.<instancetype|preference>.inferFromVolume`. A VM without such a
 * matcher is returned as it is.
 */
export async function inferMatchers(
  client: ObjectClient,
  vm: VirtualMachine,
): Promise<{ vm: VirtualMachine; errors: FieldError[] }> {
  if (!vm.spec?.instancetype?.inferFromVolume && !vm.spec?.preference?.inferFromVolume)
    return { vm, errors: [] };
  const out: VirtualMachine = structuredClone(vm);
  for (const which of ['instancetype', 'preference'] as const) {
    const matcher = out.spec[which];
    if (!matcher?.inferFromVolume) continue;
    const ignore = matcher.inferFromVolumeFailurePolicy === 'IgnoreInferFromVolumeFailure';
    try {
      out.spec[which] = await new Inferrer(client, vm, which).fromVolumes(matcher.inferFromVolume);
    } catch (err) {
      if (err instanceof Ignorable && ignore) {
        delete out.spec[which];
        continue;
      }
      const path = FieldPath.of('spec', which, 'inferFromVolume');
      return { vm, errors: [fieldError(path, `failed to infer the ${which}: ${(err as Error).message}`)] };
    }
    if (which === 'instancetype' && ignore) delete out.spec.template?.spec?.domain?.memory;
  }
  return { vm: out, errors: [] };
}
