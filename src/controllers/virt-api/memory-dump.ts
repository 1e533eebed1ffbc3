/**
 * The `memorydump` and `removememorydump` subresources of VMs, as upstream's
 * pkg/virt-api/rest/memorydump.go serves them: a dump request is checked (a hotplug
 * feature gate on, a claim name, the VMI running, the claim a read-write Filesystem claim
 * big enough for the guest's memory) and written to the VM's `status.memoryDumpRequest`
 * as Associating; a remove request marks it Dissociating. The VM controller carries them
 * out (virt-controller/vm/memory-dump.ts). Both answer 202 Accepted.
 */
import type { ClusterConfig } from '../../api/config/cluster-config';
import { FeatureGate } from '../../api/config/feature-gates';
import { formatQuantity } from '../../api/config/quantity';
import type { CDIConfig } from '../../api/generated/cdi/types';
import type { VirtualMachine, VirtualMachineMemoryDumpRequest } from '../../api/generated/types';
import {
  expectedMemoryDumpBytes,
  filesystemOverhead,
  withFilesystemOverhead,
} from '../common/memory-dump-size';
import { bytesOf } from '../common/quantity';
import { ConflictError, InvalidError, NotFoundError } from '../runtime/errors';
import { CDIConfigType, PersistentVolumeClaimType, VirtualMachineType } from '../runtime/resources';
import type { JsonPatchOp, KubeObject, ObjectClient } from '../runtime/types';
import { conflict, HttpError, notFound } from './http-error';
import { fetchVmi } from './vmi-subresources';

const NOT_ENABLED = 'Enable DeclarativeHotplugVolumes or HotplugVolumes feature gate to use this API.';

type Vm = VirtualMachine & KubeObject;

const claimConflict = (name: string, why: string) =>
  new HttpError(409, `Operation cannot be fulfilled on persistentvolumeclaim "${name}": ${why}`, {
    name,
    group: '',
    kind: 'persistentvolumeclaim',
  });

/** The claim's size as upstream compares it: the request rounded up to whole kilobytes (10^3). */
function scaledKilo(bytes: bigint): bigint {
  return ((bytes + 999n) / 1000n) * 1000n;
}

/** upstream validateMemoryDumpClaim: a read-write Filesystem claim of at least the dump's size. */
/** What the checks read of a claim. */
interface Claim {
  spec?: {
    accessModes?: string[];
    volumeMode?: string;
    storageClassName?: string;
    resources?: { requests?: Record<string, string> };
  };
}

async function checkClaim(
  client: ObjectClient,
  ns: string,
  claimName: string,
  expected: bigint,
): Promise<void> {
  let pvc: Claim;
  try {
    pvc = await client.get<Claim & KubeObject>(PersistentVolumeClaimType, claimName, ns);
  } catch (e) {
    if (e instanceof NotFoundError)
      throw new HttpError(404, `persistentvolumeclaim "${claimName}" not found`, {
        name: claimName,
        group: '',
        kind: 'persistentvolumeclaim',
      });
    throw new HttpError(500, `unable to retrieve pvc [${claimName}]: ${(e as Error).message}`);
  }
  if (pvc.spec?.volumeMode === 'Block') throw claimConflict(claimName, 'pvc should be filesystem pvc');
  const modes = pvc.spec?.accessModes ?? [];
  if (modes.includes('ReadOnlyMany')) throw claimConflict(claimName, "pvc access mode can't be read only");
  const config = await client
    .get<CDIConfig & KubeObject>(CDIConfigType, 'config')
    .catch((e) => (e instanceof NotFoundError ? undefined : Promise.reject(e)));
  const needed = withFilesystemOverhead(expected, filesystemOverhead(config, pvc.spec?.storageClassName));
  const size = scaledKilo(
    bytesOf(pvc.spec?.resources?.requests?.storage, 'spec.resources.requests.storage') ?? 0n,
  );
  if (size < needed)
    throw claimConflict(
      claimName,
      `pvc size [${formatQuantity(Number(size), 'DecimalSI')}] should be bigger then [${formatQuantity(Number(needed))}]`,
    );
}

/** The request as the VM's status should hold it, or the refusal (upstream add/removeMemoryDumpRequest). */
function nextRequest(
  vm: Vm,
  body: VirtualMachineMemoryDumpRequest,
  remove: boolean,
): VirtualMachineMemoryDumpRequest {
  const cur = vm.status?.memoryDumpRequest;
  const name = vm.metadata?.name ?? '';
  if (remove) {
    if (!cur)
      throw conflict(
        'virtualmachine',
        name,
        `can't remove memory dump association for vm ${name}, no association found`,
      );
    if (cur.remove)
      throw conflict(
        'virtualmachine',
        name,
        `memory dump remove request for pvc [${cur.claimName}] already exists`,
      );
    return { claimName: cur.claimName, phase: 'Dissociating', remove: true };
  }
  if (cur?.phase === 'Dissociating')
    throw conflict(
      'virtualmachine',
      name,
      `can't dump memory for pvc [${body.claimName}] a remove memory dump request is in progress`,
    );
  if (cur && cur.phase !== 'Completed' && cur.phase !== 'Failed')
    throw conflict(
      'virtualmachine',
      name,
      `memory dump request for pvc [${body.claimName}] already in progress`,
    );
  return { claimName: body.claimName, phase: 'Associating' };
}

/** The memorydump body: `{claimName}` (empty: the claim of the VM's current association). */
function parseBody(body: unknown): VirtualMachineMemoryDumpRequest {
  if (body === undefined || body === null) throw new HttpError(400, 'Request with no body');
  if (typeof body !== 'object' || Array.isArray(body))
    throw new HttpError(400, 'VirtualMachineMemoryDumpRequest: the body must be an object');
  const claimName = (body as { claimName?: unknown }).claimName ?? '';
  if (typeof claimName !== 'string')
    throw new HttpError(400, 'VirtualMachineMemoryDumpRequest.claimName must be a string');
  if (claimName !== '' && !/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/.test(claimName))
    throw new HttpError(
      400,
      `VirtualMachineMemoryDumpRequest.claimName ${JSON.stringify(claimName.slice(0, 100))} is not a DNS-1123 label`,
    );
  return { claimName, phase: 'Associating' };
}

/** Serves `PUT .../virtualmachines/NAME/memorydump|removememorydump`. */
export async function memoryDumpRequest(
  client: ObjectClient,
  config: ClusterConfig,
  ns: string,
  name: string,
  op: 'memorydump' | 'removememorydump',
  body: unknown,
): Promise<void> {
  const remove = op === 'removememorydump';
  let req: VirtualMachineMemoryDumpRequest = { claimName: '', phase: 'Dissociating' };
  if (!remove) {
    if (
      !config.isFeatureGateEnabled(FeatureGate.DeclarativeHotplugVolumes) &&
      !config.isFeatureGateEnabled(FeatureGate.HotplugVolumes)
    )
      throw new HttpError(400, NOT_ENABLED);
    req = parseBody(body);
  }
  let vm: Vm;
  try {
    vm = await client.get<Vm>(VirtualMachineType, name, ns);
  } catch {
    throw notFound('virtualmachine', name);
  }
  if (!remove) {
    // upstream validateMemoryDumpRequest.
    const cur = vm.status?.memoryDumpRequest;
    if (req.claimName === '' && !cur) throw new HttpError(400, 'Memory dump requires claim name to be set');
    if (cur && req.claimName !== '' && cur.claimName !== req.claimName)
      throw conflict(
        'virtualmachine',
        name,
        `can't request memory dump for pvc [${req.claimName}] while pvc [${cur.claimName}] is still associated as the memory dump pvc`,
      );
    if (cur && req.claimName === '') req.claimName = cur.claimName;
    const vmi = await fetchVmi(client, ns, name);
    if (vmi.status?.phase !== 'Running') throw conflict('virtualmachineinstance', name, 'VMI is not running');
    await checkClaim(client, ns, req.claimName, expectedMemoryDumpBytes(vmi));
  }
  const next = nextRequest(vm, req, remove);
  // The resourceVersion test makes a concurrent change fail instead of being lost.
  const ops: JsonPatchOp[] = [
    { op: 'test', path: '/metadata/resourceVersion', value: vm.metadata?.resourceVersion },
    vm.status
      ? {
          op: vm.status.memoryDumpRequest ? 'replace' : 'add',
          path: '/status/memoryDumpRequest',
          value: next,
        }
      : { op: 'add', path: '/status', value: { memoryDumpRequest: next } },
  ];
  try {
    await client.patch(VirtualMachineType, name, ops, { namespace: ns, type: 'json', subresource: 'status' });
  } catch (e) {
    if (e instanceof InvalidError) throw new HttpError(422, e.message);
    if (e instanceof ConflictError) throw conflict('virtualmachine', name, e.message);
    if (e instanceof NotFoundError) throw notFound('virtualmachine', name);
    throw new HttpError(500, `unable to patch vm status: ${(e as Error).message}`);
  }
}

/** Whether `op` is one of the memory dump subresources. */
export const isMemoryDumpOperation = (op: string): op is 'memorydump' | 'removememorydump' =>
  op === 'memorydump' || op === 'removememorydump';
