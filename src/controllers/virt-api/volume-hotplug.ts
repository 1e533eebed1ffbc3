/**
 * The `addvolume` and `removevolume` subresources of VMs and VMIs, as upstream v1.9's
 * pkg/virt-api/rest/volumes.go serves them: the options body is checked, then the volume
 * and its disk are added to (or removed from) the VMI's spec (`virtualmachineinstances/...`,
 * ephemeral) or the VM's template (`virtualmachines/...`, which the VM controller carries to
 * the running VMI: DeclarativeHotplugVolumes), by a JSON patch that tests the lists it
 * replaces, so a concurrent change fails instead of being lost. With the deprecated
 * HotplugVolumes gate upstream queues VM requests in `status.volumeRequests`; here the VM's
 * template and its running VMI are patched directly (the same end state).
 */
import type { ClusterConfig } from '../../api/config/cluster-config';
import { FeatureGate } from '../../api/config/feature-gates';
import type {
  AddVolumeOptions,
  Disk,
  HotplugVolumeSource,
  RemoveVolumeOptions,
  VirtualMachine,
  VirtualMachineInstanceSpec,
  Volume,
} from '../../api/generated/types';
import { ConflictError, InvalidError, NotFoundError } from '../runtime/errors';
import { VirtualMachineInstanceType, VirtualMachineType } from '../runtime/resources';
import type { KubeObject, ObjectClient } from '../runtime/types';
import { conflict, HttpError, notFound } from './http-error';
import { fetchVmi, type Vmi } from './vmi-subresources';

const NOT_ENABLED = 'Enable DeclarativeHotplugVolumes or HotplugVolumes feature gate to use this API.';

/** A volume request: exactly one of add and remove. */
type VolumeRequest =
  | { add: AddVolumeOptions; remove?: undefined }
  | { add?: undefined; remove: RemoveVolumeOptions };

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The AddVolumeOptions body, checked as upstream's addVolumeRequestHandler does. */
export function parseAddVolumeOptions(body: unknown): AddVolumeOptions {
  if (!isObject(body)) throw new HttpError(400, 'AddVolumeOptions: the body must be an object');
  const o = body as unknown as AddVolumeOptions;
  if (typeof o.name !== 'string' || o.name === '')
    throw new HttpError(400, 'AddVolumeOptions requires name to be set');
  if (!isObject(o.disk)) throw new HttpError(400, 'AddVolumeOptions requires disk to not be nil');
  if (!isObject(o.volumeSource))
    throw new HttpError(400, 'AddVolumeOptions requires VolumeSource to not be nil');
  const src = o.volumeSource;
  if (!src.dataVolume === !src.persistentVolumeClaim)
    throw new HttpError(
      400,
      'AddVolumeOptions.volumeSource: set exactly one of dataVolume and persistentVolumeClaim',
    );
  const disk: Disk = { ...o.disk, name: o.name };
  const volumeSource = (
    src.dataVolume
      ? { dataVolume: { ...src.dataVolume, hotpluggable: true } }
      : { persistentVolumeClaim: { ...(src.persistentVolumeClaim ?? {}), hotpluggable: true } }
  ) as HotplugVolumeSource;
  const named = volumeSource.dataVolume?.name ?? volumeSource.persistentVolumeClaim?.claimName;
  if (typeof named !== 'string' || named === '')
    throw new HttpError(400, 'AddVolumeOptions.volumeSource: the DataVolume or claim needs a name');
  return { ...o, disk, volumeSource };
}

/** The RemoveVolumeOptions body. */
export function parseRemoveVolumeOptions(body: unknown): RemoveVolumeOptions {
  if (!isObject(body)) throw new HttpError(400, 'RemoveVolumeOptions: the body must be an object');
  const o = body as unknown as RemoveVolumeOptions;
  if (typeof o.name !== 'string' || o.name === '')
    throw new HttpError(400, 'RemoveVolumeOptions requires name to be set');
  return o;
}

const claimName = (v: Volume) => v.dataVolume?.name ?? v.persistentVolumeClaim?.claimName;
const hotpluggable = (v: Volume) => !!(v.dataVolume?.hotpluggable || v.persistentVolumeClaim?.hotpluggable);

/** upstream verifyVolumeOption: no duplicate name or source on add; a hotpluggable volume to remove. */
export function verifyVolumeRequest(volumes: Volume[], r: VolumeRequest): string | undefined {
  if (r.add) {
    const src = r.add.volumeSource.dataVolume?.name ?? r.add.volumeSource.persistentVolumeClaim?.claimName;
    for (const v of volumes) {
      if (v.name === r.add.name)
        return `Unable to add volume [${r.add.name}] because volume with that name already exists`;
      if (src !== undefined && claimName(v) === src)
        return `Unable to add volume source [${src}] because it already exists`;
    }
    return undefined;
  }
  const found = volumes.find((v) => v.name === r.remove.name || claimName(v) === r.remove.name);
  if (!found) return `Unable to remove volume [${r.remove.name}] because it does not exist`;
  if (!hotpluggable(found)) return `Unable to remove volume [${found.name}] because it is not hotpluggable`;
  return undefined;
}

/** upstream ApplyVolumeRequestOnVMISpec: the spec's volumes and disks after the request. */
export function applyVolumeRequest(
  spec: VirtualMachineInstanceSpec,
  r: VolumeRequest,
): { volumes: Volume[]; disks: Disk[] } {
  const volumes = [...(spec.volumes ?? [])];
  const disks = [...(spec.domain.devices.disks ?? [])];
  if (r.add) {
    volumes.push({ name: r.add.name, ...r.add.volumeSource } as Volume);
    disks.push(r.add.disk);
    return { volumes, disks };
  }
  const gone = volumes.find((v) => v.name === r.remove.name || claimName(v) === r.remove.name)?.name;
  return { volumes: volumes.filter((v) => v.name !== gone), disks: disks.filter((d) => d.name !== gone) };
}

/** The JSON patch replacing volumes and disks under `prefix`, testing the lists it replaces. */
function volumePatch(prefix: string, spec: VirtualMachineInstanceSpec, r: VolumeRequest): unknown[] {
  const next = applyVolumeRequest(spec, r);
  const ops: unknown[] = [];
  const put = (path: string, old: unknown[] | undefined, value: unknown[]) => {
    if (old === undefined) ops.push({ op: 'add', path, value });
    else ops.push({ op: 'test', path, value: old }, { op: 'replace', path, value });
  };
  put(`${prefix}/spec/volumes`, spec.volumes, next.volumes);
  put(`${prefix}/spec/domain/devices/disks`, spec.domain.devices.disks, next.disks);
  return ops;
}

const dryRunOf = (r: VolumeRequest) => (r.add ?? r.remove).dryRun?.[0] === 'All';

async function patchOrExplain(
  client: ObjectClient,
  type: typeof VirtualMachineType,
  kind: 'virtualmachine' | 'virtualmachineinstance',
  ns: string,
  name: string,
  ops: unknown[],
  dryRun: boolean,
): Promise<void> {
  try {
    await client.patch(type, name, ops, { namespace: ns, type: 'json', dryRun });
  } catch (e) {
    // The admission webhook's refusal names the field; a failed test is a concurrent change.
    if (e instanceof InvalidError) throw new HttpError(422, e.message);
    if (e instanceof ConflictError) throw conflict(kind, name, e.message);
    if (e instanceof NotFoundError) throw notFound(kind, name);
    throw new HttpError(500, `unable to patch ${kind}: ${(e as Error).message}`);
  }
}

function requireEnabled(config: ClusterConfig): void {
  if (
    !config.isFeatureGateEnabled(FeatureGate.DeclarativeHotplugVolumes) &&
    !config.isFeatureGateEnabled(FeatureGate.HotplugVolumes)
  )
    throw new HttpError(400, NOT_ENABLED);
}

const ownedByVm = (vmi: Vmi) =>
  (vmi.metadata?.ownerReferences ?? []).some(
    (r) => r.controller && r.kind === 'VirtualMachine' && r.apiVersion === 'kubevirt.io/v1',
  );

/** `PUT .../virtualmachineinstances/NAME/addvolume|removevolume`: the VMI's spec only. */
async function vmiVolumeRequest(
  client: ObjectClient,
  config: ClusterConfig,
  ns: string,
  name: string,
  r: VolumeRequest,
): Promise<void> {
  const vmi = await fetchVmi(client, ns, name);
  // Declaratively, the VM's template is the truth: an ephemeral VMI change would be undone.
  if (ownedByVm(vmi) && !config.isFeatureGateEnabled(FeatureGate.HotplugVolumes))
    throw new HttpError(400, `VMI ${ns}/${name} is owned by a VM`);
  if (vmi.status?.phase !== 'Running') throw conflict('virtualmachineinstance', name, 'VMI is not running');
  const why = verifyVolumeRequest(vmi.spec.volumes ?? [], r);
  if (why) throw conflict('virtualmachineinstance', name, why);
  await patchOrExplain(
    client,
    VirtualMachineInstanceType,
    'virtualmachineinstance',
    ns,
    name,
    volumePatch('', vmi.spec, r),
    dryRunOf(r),
  );
}

/** `PUT .../virtualmachines/NAME/addvolume|removevolume`: the VM's template (and so its VMI). */
async function vmVolumeRequest(
  client: ObjectClient,
  config: ClusterConfig,
  ns: string,
  name: string,
  r: VolumeRequest,
): Promise<void> {
  let vm: VirtualMachine & KubeObject;
  try {
    vm = await client.get<VirtualMachine & KubeObject>(VirtualMachineType, name, ns);
  } catch {
    throw notFound('virtualmachine', name);
  }
  const spec = vm.spec.template?.spec;
  if (!spec) throw conflict('virtualmachine', name, 'spec.template.spec is not set');
  const why = verifyVolumeRequest(spec.volumes ?? [], r);
  if (why) throw conflict('virtualmachine', name, why);
  await patchOrExplain(
    client,
    VirtualMachineType,
    'virtualmachine',
    ns,
    name,
    volumePatch('/spec/template', spec, r),
    dryRunOf(r),
  );
  // The deprecated imperative gate: no declarative sync carries the change, so the
  // running VMI gets it here (upstream's volumeRequests end the same way).
  if (config.isFeatureGateEnabled(FeatureGate.HotplugVolumes) && !dryRunOf(r)) {
    const vmi = await fetchVmi(client, ns, name).catch(() => undefined);
    if (vmi?.status?.phase === 'Running' && !verifyVolumeRequest(vmi.spec.volumes ?? [], r))
      await patchOrExplain(
        client,
        VirtualMachineInstanceType,
        'virtualmachineinstance',
        ns,
        name,
        volumePatch('', vmi.spec, r),
        false,
      );
  }
}

/** Serves one volume subresource call (`op` addvolume or removevolume) on a VM or VMI. */
export async function volumeRequest(
  client: ObjectClient,
  config: ClusterConfig,
  resource: 'virtualmachines' | 'virtualmachineinstances',
  ns: string,
  name: string,
  op: 'addvolume' | 'removevolume',
  body: unknown,
): Promise<void> {
  requireEnabled(config);
  const r: VolumeRequest =
    op === 'addvolume' ? { add: parseAddVolumeOptions(body) } : { remove: parseRemoveVolumeOptions(body) };
  if (resource === 'virtualmachines') await vmVolumeRequest(client, config, ns, name, r);
  else await vmiVolumeRequest(client, config, ns, name, r);
}

/** Whether `op` is one of the volume subresources. */
export const isVolumeOperation = (op: string): op is 'addvolume' | 'removevolume' =>
  op === 'addvolume' || op === 'removevolume';
