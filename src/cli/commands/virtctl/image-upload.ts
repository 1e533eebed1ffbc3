/**
 * `virtctl image-upload dv|pvc NAME --image-path FILE [--size 1Gi] ...` (upstream's
 * pkg/virtctl/imageupload, its flags and messages): makes an upload DataVolume (or a PVC
 * annotated for upload) unless it exists or `--no-create`, waits for its upload pod to be
 * ready, takes a token from an UploadTokenRequest, sends the image to the upload proxy
 * (`--uploadproxy-url`, else the CDIConfig's `status.uploadProxyURL`) and waits until the
 * claim says the upload Succeeded. In local mode the same, against the proxy `up` serves
 * on loopback (the CDIConfig names it): the token comes from the local API and the
 * proxy's certificate is checked against local mode's CA (`<state>/pki/ca.crt`).
 */
import { constants } from 'node:fs';
import { access, readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { quantityProblem } from '../../../api/config/quantity';
import type { CDIConfig, DataVolume } from '../../../api/generated/cdi/types';
import {
  FORCE_BIND_ANNOTATION,
  POD_PHASE_ANNOTATION,
  POD_READY_ANNOTATION,
  UPLOAD_REQUEST_ANNOTATION,
} from '../../../controllers/common/cdi-upload';
import { NotFoundError } from '../../../controllers/runtime/errors';
import {
  CDIConfigType,
  DataVolumeType,
  PersistentVolumeClaimType,
  StorageClassType,
} from '../../../controllers/runtime/resources';
import type { KubeObject, ResourceType } from '../../../controllers/runtime/types';
import { localPkiFiles } from '../../local/local-pki';
import { uploadImage } from './image-upload-transfer';
import { type Target, type TargetOptions, withTarget, withTargetOptions } from './target';

interface Flags extends TargetOptions {
  insecure?: boolean;
  uploadproxyUrl?: string;
  pvcName?: string;
  pvcSize?: string;
  size?: string;
  storageClass?: string;
  accessMode?: string;
  blockVolume?: boolean;
  volumeMode?: string;
  imagePath?: string;
  archivePath?: string;
  noCreate?: boolean;
  waitSecs: string;
  retry: string;
  forceBind?: boolean;
  datasource?: boolean;
  defaultInstancetype?: string;
  defaultInstancetypeKind?: string;
  defaultPreference?: string;
  defaultPreferenceKind?: string;
}

const UploadTokenRequestType: ResourceType = {
  group: 'upload.cdi.kubevirt.io',
  version: 'v1beta1',
  kind: 'UploadTokenRequest',
  plural: 'uploadtokenrequests',
  namespaced: true,
  statusSubresource: false,
};

type Claim = KubeObject & { spec?: Record<string, unknown> };
const say = (m: string) => process.stdout.write(`${m}\n`);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** What the arguments and flags ask for (upstream's parseArgs and its checks). */
export interface UploadRequest {
  kind: 'dv' | 'pvc';
  name: string;
  imagePath: string;
  volumeMode?: 'block' | 'filesystem';
}

/** Parses the words and flags; errors as upstream's, and a refusal for what is not built. */
export function parseUploadArgs(args: string[], f: Flags): UploadRequest {
  if (f.size && f.pvcSize && f.size !== f.pvcSize)
    throw new Error('--pvc-size and --size can not be specified at the same time');
  if (f.pvcSize) f.size = f.pvcSize;
  let volumeMode = f.volumeMode;
  if (f.blockVolume) {
    if (!volumeMode) volumeMode = 'block';
    else if (volumeMode !== 'block')
      throw new Error(`incompatible --volume-mode '${volumeMode}' and --block-volume`);
  }
  if (volumeMode && volumeMode !== 'block' && volumeMode !== 'filesystem')
    throw new Error(`Invalid volume mode '${volumeMode}'. Valid values are 'block' and 'filesystem'.`);
  if (f.archivePath)
    throw new Error(
      '--archive-path: archive uploads (contentType archive) are not supported by kubevirt-ts yet',
    );
  if (!f.imagePath) throw new Error('either image-path or archive-path must be provided');
  if (f.datasource)
    throw new Error('--datasource: creating a DataSource is not supported by kubevirt-ts yet');
  if (f.defaultInstancetype === undefined && f.defaultInstancetypeKind)
    throw new Error('--default-instancetype must be provided with --default-instancetype-kind');
  if (f.defaultPreference === undefined && f.defaultPreferenceKind)
    throw new Error('--default-preference must be provided with --default-preference-kind');
  if ((f.defaultInstancetype || f.defaultPreference) && f.noCreate)
    throw new Error('--default-instancetype and --default-preference cannot be used with --no-create');
  if (f.accessMode === 'ReadOnlyMany')
    throw new Error(
      'cannot upload to a readonly volume, use either ReadWriteOnce or ReadWriteMany if supported',
    );
  if (f.size) {
    const problem = quantityProblem(f.size);
    if (problem) throw new Error(`validation failed for size=${f.size}: ${problem}`);
  }
  const mode = volumeMode as UploadRequest['volumeMode'];
  // Deprecated form: --pvc-name makes a PVC.
  if (f.pvcName) {
    if (args.length) throw new Error('cannot use --pvc-name and args');
    return { kind: 'pvc', name: f.pvcName, imagePath: f.imagePath, volumeMode: mode };
  }
  if (args.length !== 2) throw new Error('expecting two args');
  const kind = args[0]!.toLowerCase();
  if (kind !== 'dv' && kind !== 'pvc') throw new Error(`invalid resource type ${args[0]}`);
  return { kind, name: args[1]!, imagePath: f.imagePath, volumeMode: mode };
}

/** The labels of the default instance type and preference (upstream's). */
function instancetypeLabels(f: Flags): Record<string, string> {
  const l: Record<string, string> = {};
  if (f.defaultInstancetype) l['instancetype.kubevirt.io/default-instancetype'] = f.defaultInstancetype;
  if (f.defaultInstancetypeKind)
    l['instancetype.kubevirt.io/default-instancetype-kind'] = f.defaultInstancetypeKind;
  if (f.defaultPreference) l['instancetype.kubevirt.io/default-preference'] = f.defaultPreference;
  if (f.defaultPreferenceKind)
    l['instancetype.kubevirt.io/default-preference-kind'] = f.defaultPreferenceKind;
  return l;
}

function storageFields(r: UploadRequest, f: Flags): Record<string, unknown> {
  return {
    resources: { requests: { storage: f.size } },
    ...(f.storageClass ? { storageClassName: f.storageClass } : {}),
    ...(f.accessMode ? { accessModes: [f.accessMode] } : {}),
    ...(r.volumeMode ? { volumeMode: r.volumeMode === 'block' ? 'Block' : 'Filesystem' } : {}),
  };
}

async function createTarget(t: Target, r: UploadRequest, f: Flags): Promise<void> {
  if (f.storageClass) await t.client.get(StorageClassType, f.storageClass);
  const labels = instancetypeLabels(f);
  const meta = { name: r.name, namespace: t.namespace, ...(Object.keys(labels).length ? { labels } : {}) };
  if (r.kind === 'dv') {
    const dv = {
      apiVersion: 'cdi.kubevirt.io/v1beta1',
      kind: 'DataVolume',
      metadata: { ...meta, annotations: f.forceBind ? { [FORCE_BIND_ANNOTATION]: '' } : {} },
      spec: { source: { upload: {} }, contentType: 'kubevirt', storage: storageFields(r, f) },
    };
    await t.client.create(DataVolumeType, dv as never);
    say(`DataVolume ${t.namespace}/${r.name} created`);
    return;
  }
  const spec = storageFields(r, f) as Record<string, unknown>;
  const pvc = {
    apiVersion: 'v1',
    kind: 'PersistentVolumeClaim',
    metadata: {
      ...meta,
      annotations: {
        [UPLOAD_REQUEST_ANNOTATION]: '',
        'cdi.kubevirt.io/storage.contentType': 'kubevirt',
        ...(f.forceBind ? { [FORCE_BIND_ANNOTATION]: '' } : {}),
      },
    },
    spec: { accessModes: ['ReadWriteOnce'], ...spec },
  };
  await t.client.create(PersistentVolumeClaimType, pvc as never);
  say(`PersistentVolumeClaim ${t.namespace}/${r.name} created`);
}

/** An existing claim made ready for an upload (upstream's ensurePVCSupportsUpload). */
async function useExisting(t: Target, pvc: Claim): Promise<void> {
  const ann = pvc.metadata?.annotations ?? {};
  if (ann[POD_PHASE_ANNOTATION] === 'Succeeded')
    throw new Error(`PVC ${pvc.metadata?.name} already successfully imported/cloned/updated`);
  if (!(UPLOAD_REQUEST_ANNOTATION in ann))
    await t.client.patch(
      PersistentVolumeClaimType,
      pvc.metadata?.name ?? '',
      { metadata: { annotations: { [UPLOAD_REQUEST_ANNOTATION]: '' } } },
      { namespace: t.namespace, type: 'merge' } as never,
    );
  say(`Using existing PVC ${t.namespace}/${pvc.metadata?.name}`);
}

/** Polls every 2 s until `ready` says so, for at most `seconds`. */
async function poll(seconds: number, what: string, ready: () => Promise<boolean>): Promise<void> {
  const end = Date.now() + seconds * 1000;
  for (;;) {
    if (await ready()) return;
    if (Date.now() >= end) throw new Error(`timed out after ${seconds}s waiting for ${what}`);
    await sleep(2000);
  }
}

async function proxyUrlOf(t: Target, f: Flags): Promise<string> {
  let url = f.uploadproxyUrl;
  if (!url) {
    const cfg = await t.client.get<CDIConfig & KubeObject>(CDIConfigType, 'config').catch((e) => {
      if (e instanceof NotFoundError) return undefined;
      throw e;
    });
    url = cfg?.status?.uploadProxyURL;
    if (!url)
      throw new Error(
        'uploadproxy URL not found: give --uploadproxy-url (e.g. through `kubectl -n kubevirt port-forward svc/cdi-uploadproxy 18443:443`)',
      );
  }
  return /^[a-z][a-z0-9+.-]*:\/\//i.test(url) ? url : `https://${url}`;
}

async function run(t: Target, args: string[], f: Flags): Promise<void> {
  const r = parseUploadArgs(args, f);
  const waitSecs = Number(f.waitSecs);
  const retries = Number(f.retry);
  if (!Number.isInteger(waitSecs) || waitSecs < 0)
    throw new Error(`--wait-secs: ${f.waitSecs} is not a number of seconds`);
  if (!Number.isInteger(retries) || retries < 1)
    throw new Error(`--retry: ${f.retry} is not a positive number`);
  await access(r.imagePath, constants.R_OK);
  const existing = await t.client.get<Claim>(PersistentVolumeClaimType, r.name, t.namespace).catch((e) => {
    if (e instanceof NotFoundError) return undefined;
    throw e;
  });
  if (existing) await useExisting(t, existing);
  else if (f.noCreate) throw new Error(`persistentvolumeclaims "${r.name}" not found`);
  else if (!f.size) throw new Error('when creating a resource, the size must be specified');
  else await createTarget(t, r, f);

  let logged = false;
  const waiting = () => {
    if (!logged) say(`Waiting for PVC ${r.name} upload pod to be ready...`);
    logged = true;
  };
  if (r.kind === 'dv' && !existing) {
    await poll(waitSecs, `DataVolume ${r.name} to be UploadReady`, async () => {
      const dv = await t.client
        .get<DataVolume & KubeObject>(DataVolumeType, r.name, t.namespace)
        .catch(() => undefined);
      if (dv?.status?.phase === 'Failed')
        throw new Error(
          `DataVolume ${r.name} failed: ${dv.status.conditions?.find((c) => c.type === 'Ready')?.message ?? ''}`,
        );
      const ok = dv?.status?.phase === 'UploadReady';
      if (!ok) waiting();
      return ok;
    });
  } else {
    await poll(waitSecs, `PVC ${r.name} upload pod to be ready`, async () => {
      const pvc = await t.client
        .get<Claim>(PersistentVolumeClaimType, r.name, t.namespace)
        .catch(() => undefined);
      const ok = pvc?.metadata?.annotations?.[POD_READY_ANNOTATION] === 'true';
      if (!ok) waiting();
      return ok;
    });
  }
  if (logged) say('Pod now ready');
  const proxyUrl = await proxyUrlOf(t, f);
  say(`Uploading data to ${proxyUrl}`);
  await uploadImage({
    proxyUrl,
    insecure: Boolean(f.insecure),
    file: r.imagePath,
    retries,
    log: say,
    ca: t.local ? await readFile(localPkiFiles(t.local.paths.pki).caCert, 'utf8') : undefined,
    token: async () => {
      if (t.local) return t.local.uploadToken(t.namespace, r.name);
      const req = {
        apiVersion: 'upload.cdi.kubevirt.io/v1beta1',
        kind: 'UploadTokenRequest',
        metadata: { generateName: 'token-for-virtctl-', namespace: t.namespace },
        spec: { pvcName: r.name },
      };
      const answer = await t.client.create<KubeObject & { status?: { token?: string } }>(
        UploadTokenRequestType,
        req as never,
      );
      if (!answer.status?.token) throw new Error('the UploadTokenRequest came back without status.token');
      return answer.status.token;
    },
  });
  say(
    'Uploading data completed successfully, waiting for processing to complete, you can hit ctrl-c without interrupting the progress',
  );
  await poll(24 * 3600, `the upload into PVC ${r.name} to be processed`, async () => {
    const pvc = await t.client.get<Claim>(PersistentVolumeClaimType, r.name, t.namespace);
    return pvc.metadata?.annotations?.[POD_PHASE_ANNOTATION] === 'Succeeded';
  });
  say('Processing completed successfully');
  say(`Uploading ${r.imagePath} completed successfully`);
}

/** Registers `image-upload` on a virtctl command tree. */
export function registerImageUploadCommand(program: Command): void {
  withTargetOptions(
    program
      .command('image-upload')
      .description('Upload a VM image to a DataVolume/PersistentVolumeClaim.')
      .argument('[args...]', 'dv|pvc NAME')
      .option('--insecure', 'Allow insecure server connections when using HTTPS.')
      .option('--uploadproxy-url <url>', 'The URL of the cdi-upload proxy service.')
      .option(
        '--pvc-name <name>',
        'The destination DataVolume/PVC name (deprecated: give it as the second argument).',
      )
      .option('--pvc-size <size>', 'The size of the PVC to create (deprecated: use --size).')
      .option('--size <size>', 'The size of the DataVolume to create (ex. 10Gi, 500Mi).')
      .option('--storage-class <name>', 'The storage class for the PVC.')
      .option('--access-mode <mode>', 'The access mode for the PVC.')
      .option('--block-volume', 'Create a PVC with VolumeMode=Block (deprecated: use --volume-mode).')
      .option('--volume-mode <mode>', 'Specify the VolumeMode (block/filesystem) used to create the PVC.')
      .option('--image-path <file>', 'Path to the local VM image.')
      .option('--archive-path <file>', 'Path to the local archive (refused: archive uploads are not built).')
      .option('--no-create', "Don't attempt to create a new DataVolume/PVC.")
      .option('--wait-secs <seconds>', 'Seconds to wait for upload pod to start.', '300')
      .option(
        '--retry <n>',
        'When upload server returns a transient error, we retry this number of times before giving up',
        '5',
      )
      .option('--force-bind', 'Force bind the PVC, ignoring the WaitForFirstConsumer logic.')
      .option(
        '--datasource',
        'Create a DataSource pointing to the created DataVolume/PVC (refused: not built).',
      )
      .option('--default-instancetype <name>', 'The default instance type to associate with the image.')
      .option(
        '--default-instancetype-kind <kind>',
        'The default instance type kind to associate with the image.',
      )
      .option('--default-preference <name>', 'The default preference to associate with the image.')
      .option('--default-preference-kind <kind>', 'The default preference kind to associate with the image.'),
  ).action((args: string[], f: Flags & { create?: boolean }) =>
    withTarget(f, (t) => run(t, args, { ...f, noCreate: f.create === false })),
  );
}
