/**
 * `virtctl vmexport create|delete|download NAME` (upstream's pkg/virtctl/vmexport, its
 * flags, messages and defaults): create makes a VirtualMachineExport of `--vm`,
 * `--snapshot` or `--pvc` with its token Secret `secret-<name>` (owned by the export);
 * download waits for the export to be Ready, takes the volume's link (gzip first) from
 * `status.links.external`, or from `links.internal` with `--service-url` or
 * `--port-forward`, fetches it with the token and writes it (`--format raw` gunzips it),
 * or with `--manifest` prints the VM's manifests; a download that created its export
 * deletes it after unless `--keep-vme`. On a cluster only (local mode runs no exports).
 */
import type { Command } from 'commander';
import { parseDuration } from '../../../api/duration';
import type { VirtualMachineExport } from '../../../api/generated/types';
import { AlreadyExistsError, NotFoundError } from '../../../controllers/runtime/errors';
import { PodType, SecretType, ServiceType } from '../../../controllers/runtime/resources';
import type { KubeObject } from '../../../controllers/runtime/types';
import { VirtualMachineExportType } from '../../../controllers/virt-controller/export/types';
import { type Target, type TargetOptions, withTarget, withTargetOptions } from './target';
import { download, type Forward, forwardPort, get } from './vmexport-transfer';

/** The flags of `vmexport download` (memory-dump download reuses them). */
export interface VmExportFlags extends TargetOptions {
  vm?: string;
  snapshot?: string;
  pvc?: string;
  ttl?: string;
  labels?: string;
  annotations?: string;
  output?: string;
  volume?: string;
  format?: string;
  insecure?: boolean;
  keepVme?: boolean;
  deleteVme?: boolean;
  portForward?: boolean;
  localPort: string;
  serviceUrl?: string;
  manifest?: boolean;
  manifestOutputFormat?: string;
  includeSecret?: boolean;
  readinessTimeout?: string;
}

type Flags = VmExportFlags;
type Vme = VirtualMachineExport & KubeObject;
const say = (m: string) => process.stderr.write(`${m}\n`);

/** The export's source from the flags (exactly one), or undefined for none. */
function sourceOf(f: Flags): VirtualMachineExport['spec']['source'] | undefined {
  const given = [
    f.vm && { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: f.vm },
    f.snapshot && { apiGroup: 'snapshot.kubevirt.io', kind: 'VirtualMachineSnapshot', name: f.snapshot },
    f.pvc && { apiGroup: '', kind: 'PersistentVolumeClaim', name: f.pvc },
  ].filter(Boolean) as Array<VirtualMachineExport['spec']['source']>;
  if (given.length > 1) throw new Error('only one of --vm, --snapshot or --pvc may be given');
  return given[0];
}

function keyValues(flag: string, s: string | undefined): Record<string, string> | undefined {
  if (!s) return undefined;
  return Object.fromEntries(
    s.split(',').map((kv) => {
      const i = kv.indexOf('=');
      if (i < 1) throw new Error(`${flag}: ${JSON.stringify(kv)} is not key=value`);
      return [kv.slice(0, i), kv.slice(i + 1)];
    }),
  );
}

/** Creates the export and its token Secret; false when it existed. */
async function create(
  t: Target,
  name: string,
  f: Flags,
  source: VirtualMachineExport['spec']['source'],
): Promise<boolean> {
  if (f.ttl) parseDuration(f.ttl, '--ttl');
  const labels = keyValues('--labels', f.labels);
  const annotations = keyValues('--annotations', f.annotations);
  const vme: Vme = {
    apiVersion: 'export.kubevirt.io/v1',
    kind: 'VirtualMachineExport',
    metadata: {
      name,
      namespace: t.namespace,
      ...(labels ? { labels } : {}),
      ...(annotations ? { annotations } : {}),
    },
    spec: { source, tokenSecretRef: `secret-${name}`, ...(f.ttl ? { ttlDuration: f.ttl } : {}) },
  };
  let made: Vme;
  try {
    made = await t.client.create<Vme>(VirtualMachineExportType, vme);
  } catch (e) {
    if (e instanceof AlreadyExistsError) return false;
    throw e;
  }
  const token = (await import('node:crypto')).randomBytes(24).toString('base64url');
  const secret = {
    apiVersion: 'v1',
    kind: 'Secret',
    metadata: {
      name: `secret-${name}`,
      namespace: t.namespace,
      ownerReferences: [
        {
          apiVersion: 'export.kubevirt.io/v1',
          kind: 'VirtualMachineExport',
          name,
          uid: made.metadata?.uid ?? '',
          controller: true,
          blockOwnerDeletion: false,
        },
      ],
    },
    type: 'Opaque',
    data: { token: Buffer.from(token).toString('base64') },
  };
  await t.client.create(SecretType, secret as KubeObject).catch((e) => {
    if (!(e instanceof AlreadyExistsError)) throw e;
  });
  say(`VirtualMachineExport '${t.namespace}/${name}' created successfully`);
  return true;
}

async function remove(t: Target, name: string): Promise<void> {
  try {
    await t.client.delete(VirtualMachineExportType, name, { namespace: t.namespace });
    say(`VirtualMachineExport '${t.namespace}/${name}' deleted successfully`);
  } catch (e) {
    if (!(e instanceof NotFoundError)) throw e;
    say(`VirtualMachineExport '${t.namespace}/${name}' does not exist`);
  }
}

/**
 * Polls until the export is Ready with the links it needs (upstream's
 * WaitForVirtualMachineExport: a Ready export without an external link is waited on too,
 * since an Ingress to virt-exportproxy may come).
 */
async function waitReady(t: Target, name: string, internal: boolean, timeoutMs: number): Promise<Vme> {
  const end = Date.now() + timeoutMs;
  let said = false;
  for (;;) {
    const e = await t.client.get<Vme>(VirtualMachineExportType, name, t.namespace).catch((err) => {
      if (err instanceof NotFoundError) return undefined;
      throw err;
    });
    const ready = e?.status?.phase === 'Ready';
    if (ready && (internal ? e.status!.links?.internal : e.status!.links?.external)) return e!;
    if (ready && !said) {
      say(`waiting for VM Export ${name} ${internal ? 'internal' : 'external'} links to be available...`);
      said = true;
    }
    if (Date.now() > end)
      throw new Error(
        ready && !internal
          ? `VirtualMachineExport ${t.namespace}/${name} has no external link after ${timeoutMs / 1000}s (no Ingress in the install namespace leads to the virt-exportproxy Service): use --port-forward or --service-url`
          : `VirtualMachineExport ${t.namespace}/${name} not ready after ${timeoutMs / 1000}s (phase ${e?.status?.phase ?? 'none'})`,
      );
    await new Promise((r) => setTimeout(r, 1000));
  }
}

async function tokenOf(t: Target, e: Vme): Promise<string> {
  const name = e.status?.tokenSecretRef ?? '';
  const s = await t.client.get<KubeObject & { data?: Record<string, string> }>(SecretType, name, t.namespace);
  return Buffer.from(s.data?.token ?? '', 'base64').toString('utf8');
}

/** upstream's GetUrlFromVirtualMachineExport: the volume's gzip (or tar.gz) link first, else raw. */
function volumeUrl(e: Vme, internal: boolean, volume?: string): { url: string; gzip: boolean } {
  const link = internal ? e.status?.links?.internal : e.status?.links?.external;
  const vols = link?.volumes ?? [];
  if (!vols.length)
    throw new Error(
      `unable to access the volume info from '${e.metadata?.namespace}/${e.metadata?.name}' VirtualMachineExport`,
    );
  if (vols.length > 1 && !volume)
    throw new Error(
      `detected more than one downloadable volume in '${e.metadata?.namespace}/${e.metadata?.name}' VirtualMachineExport: Select the expected volume using the --volume flag`,
    );
  const v = vols.length === 1 ? vols[0] : vols.find((x) => x.name === volume);
  const f =
    v?.formats?.find((x) => x.format === 'gzip' || x.format === 'tar.gz') ??
    v?.formats?.find((x) => x.format === 'raw');
  if (!f)
    throw new Error(
      `unable to get a valid URL from '${e.metadata?.namespace}/${e.metadata?.name}' VirtualMachineExport`,
    );
  return { url: f.url, gzip: f.format !== 'raw' };
}

/** Starts the port-forward to the export's pod (found by its Service's selector). */
async function portForward(t: Target, e: Vme, localPort: number): Promise<Forward> {
  if (!t.kubeConfig) throw new Error('--port-forward needs a cluster (--kubeconfig)');
  const svc = await t.client.get<KubeObject & { spec?: { selector?: Record<string, string> } }>(
    ServiceType,
    e.status?.serviceName ?? '',
    t.namespace,
  );
  const selector = Object.entries(svc.spec?.selector ?? {})
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
  const pods = await t.client.list(PodType, { namespace: t.namespace, labelSelector: selector });
  const pod = pods.items[0]?.metadata?.name;
  if (!pod) throw new Error(`no pods found for the service ${svc.metadata?.name}`);
  return forwardPort(t.kubeConfig, t.namespace, pod, 8443, localPort);
}

/**
 * `vmexport download`: creates the export when a source is given, waits for it, downloads
 * its volume (or prints its manifests), and deletes an export it created unless asked not to.
 */
export async function runDownload(t: Target, name: string, f: Flags): Promise<void> {
  const source = sourceOf(f);
  if (!f.manifest && !f.output) throw new Error('--output: the file to write the volume to is required');
  if (f.format && f.format !== 'gzip' && f.format !== 'raw')
    throw new Error(`--format: ${JSON.stringify(f.format)} is neither gzip nor raw`);
  const created = source ? await create(t, name, f, source) : false;
  const deleteAfter = !f.manifest && (f.deleteVme || (created && !f.keepVme));
  const timeoutMs = f.readinessTimeout ? parseDuration(f.readinessTimeout, '--readiness-timeout') : 120_000;
  let fwd: Forward | undefined;
  try {
    const internal = Boolean(f.portForward || f.serviceUrl);
    const e = await waitReady(t, name, internal, timeoutMs);
    if (f.portForward) fwd = await portForward(t, e, Number(f.localPort));
    const link = internal ? e.status!.links!.internal! : e.status!.links!.external!;
    const connectTo = fwd ? `127.0.0.1:${fwd.port}` : f.serviceUrl;
    const common = { token: await tokenOf(t, e), ca: link.cert, connectTo, insecure: f.insecure };
    if (f.manifest) {
      const byType = Object.fromEntries((link.manifests ?? []).map((m) => [m.type, m.url]));
      if (!byType.all) throw new Error('cannot get manifest for PVC export');
      const accept = f.manifestOutputFormat === 'json' ? 'application/json' : 'application/yaml';
      for (const url of [
        byType.all,
        ...(f.includeSecret && byType['auth-header-secret'] ? [byType['auth-header-secret']] : []),
      ]) {
        const res = await get({ ...common, url, headers: { accept } });
        const chunks: Buffer[] = [];
        for await (const c of res) chunks.push(c as Buffer);
        if (res.statusCode !== 200) throw new Error(`GET ${new URL(url).pathname}: ${res.statusCode}`);
        process.stdout.write(Buffer.concat(chunks));
      }
      return;
    }
    const { url, gzip } = volumeUrl(e, internal, f.volume);
    const n = await download({ ...common, url }, f.output!, gzip && f.format === 'raw');
    say(`Downloaded ${n} bytes to ${f.output}\nDownload finished successfully`);
  } finally {
    await fwd?.close();
    if (deleteAfter) await remove(t, name);
  }
}

/** Registers `vmexport` on a virtctl command tree. */
export function registerVmExportCommand(program: Command): void {
  const vmexport = program
    .command('vmexport')
    .description('export a VM, VM snapshot or PVC (VirtualMachineExport)');
  const sources = (c: Command) =>
    c
      .option('--vm <name>', 'export this VirtualMachine')
      .option('--snapshot <name>', 'export this VirtualMachineSnapshot')
      .option('--pvc <name>', 'export this PersistentVolumeClaim')
      .option('--ttl <duration>', 'time after creation the export is deleted (server default 2h)')
      .option('--labels <k=v,...>', 'labels of the export and its pod')
      .option('--annotations <k=v,...>', 'annotations of the export and its pod');
  withTargetOptions(sources(vmexport.command('create').argument('<name>'))).action((name: string, f: Flags) =>
    withTarget(f, async (t) => {
      const source = sourceOf(f);
      if (!source)
        throw new Error(
          'need to specify export kind when attempting to create a VirtualMachineExport: --vm, --snapshot or --pvc',
        );
      if (!(await create(t, name, f, source)))
        throw new Error(`VirtualMachineExport '${t.namespace}/${name}' already exists`);
    }),
  );
  withTargetOptions(vmexport.command('delete').argument('<name>')).action((name: string, f: Flags) =>
    withTarget(f, (t) => remove(t, name)),
  );
  withTargetOptions(
    sources(vmexport.command('download').argument('<name>'))
      .option('--output <file>', 'where to write the volume')
      .option('--volume <name>', 'the volume to download (when the export has several)')
      .option('--format <gzip|raw>', 'gzip (as served, the default) or raw (gunzipped while written)')
      .option('--insecure', 'do not verify the export server certificate')
      .option('--keep-vme', 'keep an export this download created')
      .option('--delete-vme', 'delete the export after the download even if it existed before')
      .option('--port-forward', 'reach the server through a port-forward to its pod (uses the internal link)')
      .option('--local-port <port>', 'local port of --port-forward (0: any)', '0')
      .option('--service-url <host:port>', 'connect there, using the internal link')
      .option('--manifest', "print the VM's manifests instead of downloading a volume")
      .option('--manifest-output-format <yaml|json>', 'format of --manifest (default yaml)')
      .option('--include-secret', 'with --manifest, also print the Secret holding the token header CDI sends')
      .option('--readiness-timeout <duration>', 'how long to wait for the export to be ready (default 2m)'),
  ).action((name: string, f: Flags) => withTarget(f, (t) => runDownload(t, name, f)));
}
