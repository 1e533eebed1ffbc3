/**
 * `virtctl memory-dump get|download|remove VM` as upstream's pkg/virtctl/memorydump, with
 * its flags and messages: `get` asks the VM's `memorydump` subresource for a dump into
 * `--claim-name` (with `--create-claim`: a claim sized as upstream sizes it, the guest's
 * memory request plus 100 MiB plus the filesystem overhead, `--storage-class`,
 * `--access-mode` ReadWriteOnce or ReadWriteMany); with `--output` it then downloads;
 * `download` waits for the request to be Completed and downloads the claim through a
 * VirtualMachineExport `export-<vm>-<claim>` of it (created, and deleted after), as
 * `vmexport download --pvc` does: the claim holds no disk image, so the export serves it
 * as an archive (`tar.gz`, or the tar with `--format raw`); `remove` dissociates the
 * claim. In local mode `get` and `remove` go to local mode's API (the same handler as
 * virt-api's); `download` needs a cluster (local mode runs no export).
 */
import type { Command } from 'commander';
import { formatQuantity } from '../../../api/config/quantity';
import type { CDIConfig } from '../../../api/generated/cdi/types';
import type { VirtualMachine, VirtualMachineInstance } from '../../../api/generated/types';
import {
  expectedMemoryDumpBytes,
  filesystemOverhead,
  withFilesystemOverhead,
} from '../../../controllers/common/memory-dump-size';
import { NotFoundError } from '../../../controllers/runtime/errors';
import {
  CDIConfigType,
  PersistentVolumeClaimType,
  VirtualMachineInstanceType,
  VirtualMachineType,
} from '../../../controllers/runtime/resources';
import type { KubeObject } from '../../../controllers/runtime/types';
import { printable } from '../../local/progress';
import { type Target, type TargetOptions, withTarget, withTargetOptions } from './target';
import { runDownload } from './vmexport';

export interface MemoryDumpFlags extends TargetOptions {
  claimName?: string;
  createClaim?: boolean;
  storageClass?: string;
  accessMode?: string;
  portForward?: boolean;
  format?: string;
  localPort: string;
  output?: string;
}

/** upstream's processingWaitTotal. */
const WAIT_MS = 10 * 60_000;
const WAIT_INTERVAL_MS = 2000;

/** The claim `--create-claim` makes: sized for the dump, upstream's labels and access modes. */
export function memoryDumpClaim(
  namespace: string,
  claimName: string,
  bytes: bigint,
  storageClass: string | undefined,
  accessMode: string | undefined,
): KubeObject {
  if (accessMode === 'ReadOnlyMany')
    throw new Error(
      'cannot dump memory to a readonly pvc, use either ReadWriteOnce or ReadWriteMany if supported',
    );
  if (accessMode && accessMode !== 'ReadWriteOnce' && accessMode !== 'ReadWriteMany')
    throw new Error('invalid access mode, use either ReadWriteOnce or ReadWriteMany if supported');
  return {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: { name: claimName, namespace, labels: { 'cdi.kubevirt.io/applyStorageProfile': 'true' } },
    spec: {
      accessModes: [accessMode || 'ReadWriteOnce'],
      resources: { requests: { storage: formatQuantity(Number(bytes)) } },
      ...(storageClass ? { storageClassName: storageClass } : {}),
    },
  } as KubeObject;
}

async function createClaim(t: Target, vmName: string, f: MemoryDumpFlags): Promise<void> {
  const claimName = f.claimName ?? '';
  const vm = await t.client.get<VirtualMachine & KubeObject>(VirtualMachineType, vmName, t.namespace);
  if (vm.status?.memoryDumpRequest)
    throw new Error(
      'please remove current memory dump association before creating a new claim for a new memory dump',
    );
  const exists = await t.client.get(PersistentVolumeClaimType, claimName, t.namespace).then(
    () => true,
    (e) => (e instanceof NotFoundError ? false : Promise.reject(e)),
  );
  if (exists)
    throw new Error(
      `PVC ${t.namespace}/${claimName} already exists, check if it should be created if not remove create flag`,
    );
  const vmi = await t.client.get<VirtualMachineInstance & KubeObject>(
    VirtualMachineInstanceType,
    vmName,
    t.namespace,
  );
  const config = await t.client.get<CDIConfig & KubeObject>(CDIConfigType, 'config').catch((e) => {
    if (e instanceof NotFoundError) {
      process.stdout.write('Using default 5.5% filesystem overhead for pvc size\n');
      return undefined;
    }
    throw e;
  });
  const bytes = withFilesystemOverhead(
    expectedMemoryDumpBytes(vmi),
    filesystemOverhead(config, f.storageClass),
  );
  await t.client.create(
    PersistentVolumeClaimType,
    memoryDumpClaim(t.namespace, claimName, bytes, f.storageClass, f.accessMode),
  );
  process.stdout.write(`PVC ${t.namespace}/${printable(claimName)} created\n`);
}

/** upstream WaitForMemoryDumpComplete: the claim of the Completed request. */
async function waitCompleted(t: Target, vmName: string): Promise<string> {
  const end = Date.now() + WAIT_MS;
  for (;;) {
    const vm = await t.client.get<VirtualMachine & KubeObject>(VirtualMachineType, vmName, t.namespace);
    const r = vm.status?.memoryDumpRequest;
    if (r?.phase === 'Completed') {
      process.stdout.write('Memory dump completed successfully\n');
      return r.claimName;
    }
    if (r?.phase === 'Failed') throw new Error(`memory dump failed: ${r.message ?? 'no reason given'}`);
    if (r)
      process.stdout.write(
        `Waiting for memorydump ${r.claimName} to complete, current phase: ${r.phase}...\n`,
      );
    if (Date.now() > end)
      throw new Error(`timed out waiting for the memory dump of VM ${vmName} to complete`);
    await new Promise((res) => setTimeout(res, WAIT_INTERVAL_MS));
  }
}

async function download(t: Target, vmName: string, f: MemoryDumpFlags): Promise<void> {
  if (!f.output) throw new Error('missing outputFile to download the memory dump');
  if (f.format && f.format !== 'gzip' && f.format !== 'raw')
    throw new Error(`--format: ${JSON.stringify(f.format)} is neither gzip nor raw`);
  const claimName = await waitCompleted(t, vmName);
  if (!claimName) throw new Error('claim name not on vm memory dump request');
  await runDownload(t, `export-${vmName}-${claimName}`, {
    ...f,
    pvc: claimName,
    output: f.output,
    insecure: true,
    localPort: f.localPort,
  });
}

async function run(t: Target, action: string, vmName: string, f: MemoryDumpFlags): Promise<void> {
  // Local mode dumps and dissociates (its API serves the two subresources); downloading
  // goes through a VirtualMachineExport, which local mode does not run.
  if (!t.kubeConfig && (action === 'download' || f.output))
    throw new Error(
      'memory-dump download needs a cluster (--kubeconfig): local mode runs no VirtualMachineExport; the dump is the file on the claim',
    );
  switch (action) {
    case 'get':
      if (f.createClaim) {
        if (!f.claimName) throw new Error('missing claim name');
        await createClaim(t, vmName, f);
      }
      try {
        await t.subresource(
          'PUT',
          t.namespace,
          vmName,
          'memorydump',
          { claimName: f.claimName ?? '' },
          'virtualmachines',
        );
      } catch (e) {
        throw new Error(`error dumping vm memory, ${(e as Error).message}`);
      }
      process.stdout.write(`Successfully submitted memory dump request of VM ${printable(vmName)}\n`);
      if (f.output) await download(t, vmName, f);
      return;
    case 'download':
      return download(t, vmName, f);
    case 'remove':
      try {
        await t.subresource('PUT', t.namespace, vmName, 'removememorydump', {}, 'virtualmachines');
      } catch (e) {
        throw new Error(`error removing memory dump association, ${(e as Error).message}`);
      }
      process.stdout.write(
        `Successfully submitted remove memory dump association of VM ${printable(vmName)}\n`,
      );
      return;
    default:
      throw new Error(`invalid action type ${printable(action)}`);
  }
}

/** Registers `memory-dump`. */
export function registerMemoryDumpCommand(program: Command): void {
  withTargetOptions(
    program
      .command('memory-dump')
      .description('Dump the memory of a running VM to a pvc')
      .argument('<action>', 'get, download or remove')
      .argument('<vm>')
      .option('--claim-name <name>', 'pvc name to contain the memory dump')
      .option('--create-claim', 'Create the pvc that will contain the memory dump')
      .option('--port-forward', 'Configure and set port-forward in a random port to download the memory dump')
      .option('--format <gzip|raw>', 'Specifies the format of the memory dump download (gzipped or raw).')
      .option('--local-port <port>', 'Specify port for port-forward', '0')
      .option('--storage-class <name>', 'The storage class for the PVC.')
      .option('--access-mode <mode>', 'The access mode for the PVC.')
      .option('--output <file>', 'Specifies the output path of the memory dump to be downloaded.'),
  ).action((action: string, vm: string, f: MemoryDumpFlags) => withTarget(f, (t) => run(t, action, vm, f)));
}
