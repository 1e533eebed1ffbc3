/**
 * `kubevirt-ts up [MANIFEST...] [--console] [-d] [--state-dir DIR]`: local mode. Starts
 * the embedded store, virt-controller, one node (virt-handler and the local pod runtime)
 * and the libvirt driver (software emulation; KVM with --kvm), applies the manifests and
 * prints phase transitions; `--console` streams the first VM's serial console. Runs until
 * Ctrl-C, or in the background with `-d`. Stopping `up` leaves guests running; the next
 * `up` on the same state directory adopts them. When an `up` already runs on the state
 * directory, the manifests are applied to it instead.
 */
import { spawn } from 'node:child_process';
import { existsSync, openSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { type Command, Option } from 'commander';
import pino, { type Logger } from 'pino';
import type { VirtualMachineInstance } from '../../api/generated/types';
import { VmiResource } from '../../controllers/common/vmi-resource';
import { DEFAULT_POD_NETWORK } from '../../controllers/local/pod-runtime/pod-network';
import { ComponentLog, parseVerbosity } from '../../controllers/logging/component-log';
import type { KubeObject, ObjectClient } from '../../controllers/runtime/types';
import { type AppliedObject, applyObjects, loadAndAdmit, storedKubeVirt } from '../local/apply';
import { attachConsole, connectConsole } from '../local/console-stream';
import { ImageStore } from '../local/images';
import { LocalClient, localRequest, runningUpPid } from '../local/local-client';
import { LocalNode } from '../local/local-node';
import { ProgressPrinter, printable, watchPhases } from '../local/progress';
import { defaultStateDir, ensureStateDirs, type StatePaths, statePaths } from '../local/state-dir';
import { UiBackend } from '../ui/backend';
import { startUiServer } from '../ui/server';
import { VERBOSITY_HELP } from '../verbosity-flag';
import { openTarget } from './virtctl/target';

/** Options of the up command. */
export interface UpOptions {
  console?: boolean;
  detach?: boolean;
  stateDir?: string;
  kvm?: boolean;
  libvirtUri?: string;
  /** The pod network's subnet; `podNetwork: false` (`--no-pod-network`) gives pods none. */
  podSubnet?: string;
  /** An optional IPv6 (unique local) range for dual-stack pods. */
  podSubnet6?: string;
  podNetwork?: boolean;
  verbose?: boolean;
  /** Also serve the web console (`kubevirt-ts ui`) from this process. */
  ui?: boolean;
  /** Set by `-d` for its child: write the console's URL to this file (mode 0600), not to the log. */
  uiUrlFile?: string;
  v?: string;
  metricsPort?: string;
}

export function registerUpCommand(program: Command): void {
  program
    .command('up')
    .description(
      'run KubeVirt locally (no cluster) and apply manifests; Ctrl-C stops the control plane, guests keep running',
    )
    .argument('[manifests...]', 'manifest files to apply')
    .option('--console', "stream the first VM's serial console")
    .option('-d, --detach', 'run in the background, serving the local sockets the CLI talks to')
    .option('--state-dir <dir>', 'state directory', defaultStateDir())
    .option(
      '--kvm',
      'run guests with KVM (domain type kvm; needs a working /dev/kvm; default: software emulation)',
    )
    .option(
      '--libvirt-uri <uri>',
      'one shared libvirt daemon for every launcher, e.g. qemu:///system (default: each launcher runs its own)',
    )
    .option(
      '--pod-subnet <cidr>',
      "pod network subnet (IPv4, on local mode's bridge kvts0)",
      DEFAULT_POD_NETWORK.subnet,
    )
    .option(
      '--pod-subnet6 <cidr>',
      'also give pods IPv6 addresses from this unique local range (fdxx::/64 to /120); masquerade then NATs the guest fd10:0:2::2',
    )
    .option(
      '--no-pod-network',
      'give launcher pods no network namespace (VMs then need autoattachPodInterface: false)',
    )
    .option('-v, --verbose', 'print component logs (JSON lines on stderr, as with --v 2)')
    .option('--v <level>', `print component logs at this verbosity: ${VERBOSITY_HELP}`)
    .option(
      '--metrics-port <port>',
      "loopback port of virt-handler's /metrics (virt-controller's is the next one; default: free ports, see metrics.json in the state dir)",
    )
    .option('--ui', 'also serve the web console on loopback and print its URL (see `kubevirt-ts ui`)')
    .addOption(new Option('--ui-url-file <file>').hideHelp())
    .action(async (manifests: string[], opts: UpOptions) => {
      await up(manifests, opts);
    });
}

function printApplied(progress: ProgressPrinter, applied: AppliedObject[]): void {
  for (const a of applied) {
    progress.line(`${a.kind} ${printable(`${a.namespace ? `${a.namespace}/` : ''}${a.name}`)} ${a.action}`);
  }
}

/**
 * With --verbose or --v: one pino logger per component, JSON lines on stderr with
 * `component` (virt-controller, virt-handler, pod runtime, ...) and, on VMI lines, the
 * VMI's kind, namespace, name and uid. The KubeVirt resource's logVerbosity does not
 * apply here: local mode's components share one process and one `--v`.
 */
function componentLoggers(opts: UpOptions): ((component: string) => Logger) | undefined {
  if (!opts.verbose && opts.v === undefined) return undefined;
  const v = opts.v === undefined ? 2 : parseVerbosity(opts.v);
  const dest = pino.destination(2);
  // The reconcile runtime's own warnings (informers, controllers) as JSON lines too.
  new ComponentLog('runtime', v, dest).captureRuntime();
  return (component) => new ComponentLog(component, v, dest).logger;
}

/** Runs the up command. */
export async function up(manifests: string[], opts: UpOptions): Promise<void> {
  const paths = statePaths(opts.stateDir ?? defaultStateDir());
  const progress = new ProgressPrinter();
  const images = new ImageStore(paths.images);
  const running = runningUpPid(paths);
  if (running) {
    const client = new LocalClient(paths);
    try {
      // Admitted with the configuration the running local mode has (its KubeVirt resource).
      const objects = await loadAndAdmit(
        manifests,
        images,
        !opts.kvm,
        await storedKubeVirt(client.store),
        client.store,
      );
      progress.line(`local mode already running (pid ${running}, ${paths.root}): applying to it`);
      printApplied(progress, await applyObjects(client.store, objects));
      if (opts.console) await streamFirstConsole(client.store, paths, objects, progress);
    } finally {
      client.close();
    }
    return;
  }
  // Check manifests first: a bad manifest or a missing image fails before anything starts.
  await loadAndAdmit(manifests, images, !opts.kvm);
  if (opts.detach) return detach(paths, manifests, opts, progress);

  ensureStateDirs(paths);
  writeFileSync(paths.pidFile, `${process.pid}\n`);
  const node = new LocalNode({
    paths,
    allowKvm: opts.kvm,
    libvirtUri: opts.libvirtUri,
    podNetwork:
      opts.podNetwork === false
        ? false
        : {
            subnet: opts.podSubnet ?? DEFAULT_POD_NETWORK.subnet,
            ...(opts.podSubnet6 ? { subnet6: opts.podSubnet6 } : {}),
          },
    metricsPort: parseMetricsPort(opts.metricsPort),
    loggers: componentLoggers(opts),
  });
  let stopping = false;
  const stop = async (why: string) => {
    if (stopping) return;
    stopping = true;
    progress.done();
    progress.line(`${why}: stopping the control plane (guests keep running; the next \`up\` adopts them)`);
    await node.stop();
    rmSync(paths.pidFile, { force: true });
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('interrupted'));
  process.on('SIGTERM', () => void stop('terminated'));
  progress.line(`starting local mode in ${paths.root}`);
  progress.wait('starting the store, controllers and node');
  await node.start();
  progress.done();
  progress.line(`ready: node ${node.nodeName}, store socket ${paths.storeSocket}`);
  progress.line(
    `metrics: virt-handler ${node.metricsUrls['virt-handler']}/metrics, virt-controller ${node.metricsUrls['virt-controller']}/metrics`,
  );
  progress.line(`storage: ${node.storageStatus}`);
  progress.line(
    node.upload
      ? `upload: cdi-uploadproxy ${node.upload.url} (the CDIConfig's uploadProxyURL: virtctl image-upload finds it)`
      : 'upload: none (no pod network: upload DataVolumes are refused)',
  );
  if (opts.ui) await serveConsole(paths, opts, progress);
  await watchPhases(node.store, progress);
  // Admitted again against the store: its KubeVirt resource, instance types and preferences.
  // Refused now, `up` stops as it does for a manifest refused before starting.
  const admitted = await loadAndAdmit(
    manifests,
    images,
    !opts.kvm,
    await storedKubeVirt(node.store),
    node.store,
  ).catch(async (e: Error) => {
    await node.stop();
    rmSync(paths.pidFile, { force: true });
    throw e;
  });
  printApplied(progress, await applyObjects(node.store, admitted));
  if (opts.console) await streamFirstConsole(node.store, paths, admitted, progress);
  // Keep running until a signal arrives.
  await new Promise<never>(() => {});
}

/** Starts `up` again as a detached child logging to the state directory, and waits until it serves. */
async function detach(paths: StatePaths, manifests: string[], opts: UpOptions, progress: ProgressPrinter) {
  ensureStateDirs(paths);
  const log = openSync(paths.logFile, 'a');
  // The child starts empty; this process applies the manifests, so their outcome is printed here.
  const args = [process.argv[1] ?? '', 'up', '--state-dir', paths.root];
  if (opts.kvm) args.push('--kvm');
  if (opts.libvirtUri) args.push('--libvirt-uri', opts.libvirtUri);
  if (opts.podSubnet) args.push('--pod-subnet', opts.podSubnet);
  if (opts.podSubnet6) args.push('--pod-subnet6', opts.podSubnet6);
  if (opts.podNetwork === false) args.push('--no-pod-network');
  if (opts.verbose) args.push('--verbose');
  if (opts.v !== undefined) args.push('--v', opts.v);
  if (opts.metricsPort) args.push('--metrics-port', opts.metricsPort);
  // The console's URL carries its session token: not into the log (0644), into a 0600 file.
  const uiUrlFile = join(paths.root, 'ui-url');
  rmSync(uiUrlFile, { force: true });
  if (opts.ui) args.push('--ui', '--ui-url-file', uiUrlFile);
  const child = spawn(process.execPath, [...process.execArgv, ...args], {
    detached: true,
    stdio: ['ignore', log, log],
  });
  child.unref();
  progress.wait('starting in the background');
  const end = Date.now() + 60_000;
  for (;;) {
    const ok = await localRequest(paths.apiSocket, 'GET', '/version').then(
      () => true,
      () => false,
    );
    if (ok && runningUpPid(paths) === child.pid) break;
    if (child.exitCode !== null || Date.now() > end) {
      progress.done();
      throw new Error(`the background \`up\` did not start: see ${paths.logFile}`);
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  progress.done();
  progress.line(`local mode running in the background (pid ${child.pid}); log ${paths.logFile}`);
  if (opts.ui) {
    for (let i = 0; i < 100 && !existsSync(uiUrlFile); i++) await new Promise((r) => setTimeout(r, 100));
    if (existsSync(uiUrlFile)) progress.line(`web console: ${readFileSync(uiUrlFile, 'utf8').trim()}`);
    else progress.line(`web console: did not start (see ${paths.logFile})`);
  }
  const client = new LocalClient(paths);
  try {
    const objects = await loadAndAdmit(
      manifests,
      new ImageStore(paths.images),
      !opts.kvm,
      await storedKubeVirt(client.store),
      client.store,
    );
    printApplied(progress, await applyObjects(client.store, objects));
    if (opts.console) await streamFirstConsole(client.store, paths, objects, progress);
  } finally {
    client.close();
  }
}

/**
 * Serves the web console from this process on the local sockets, and prints its URL (or
 * writes it to `--ui-url-file`, mode 0600, for `-d`). A missing bundle is reported, not fatal.
 */
async function serveConsole(paths: StatePaths, opts: UpOptions, progress: ProgressPrinter): Promise<void> {
  try {
    const backend = new UiBackend(openTarget({ stateDir: paths.root }));
    const server = await startUiServer({ backend });
    if (opts.uiUrlFile) writeFileSync(opts.uiUrlFile, `${server.url}\n`, { mode: 0o600 });
    else progress.line(`web console: ${server.url}`);
  } catch (e) {
    progress.line(`web console: not started: ${(e as Error).message}`);
  }
}

/** The VMI name of the first VM or VMI among `objects`. */
function firstVmi(objects: Array<{ kind?: string; metadata?: { name?: string; namespace?: string } }>) {
  const o = objects.find((x) => x.kind === 'VirtualMachine' || x.kind === 'VirtualMachineInstance');
  return o ? { name: o.metadata?.name ?? '', namespace: o.metadata?.namespace ?? 'default' } : undefined;
}

/** Waits for the first VM's VMI to run, then copies its console to stdout until it closes. */
async function streamFirstConsole(
  client: ObjectClient,
  paths: StatePaths,
  objects: Array<{ kind?: string; metadata?: { name?: string; namespace?: string } }>,
  progress: ProgressPrinter,
): Promise<void> {
  const target = firstVmi(objects);
  if (!target) {
    progress.line('--console: no VirtualMachine or VirtualMachineInstance in the manifests');
    return;
  }
  const id = printable(`${target.namespace}/${target.name}`);
  let socket: string | undefined;
  for (;;) {
    const vmi = await client
      .get<VirtualMachineInstance & KubeObject>(VmiResource, target.name, target.namespace)
      .catch(() => undefined);
    if (vmi?.status?.phase === 'Failed' || vmi?.status?.phase === 'Succeeded') {
      throw new Error(`VirtualMachineInstance ${id} ended (${vmi.status.phase}) before its console opened`);
    }
    if (vmi?.status?.nodeName) {
      socket = await localRequest<{ socket: string }>(
        paths.apiSocket,
        'GET',
        `/apis/subresources.kubevirt.io/v1/namespaces/${target.namespace}/virtualmachineinstances/${target.name}/console`,
      ).then(
        (r) => r.socket,
        () => undefined,
      );
      if (socket) break;
    }
    await new Promise((r) => setTimeout(r, 200));
  }
  progress.line(`console of ${id} (Ctrl-C stops up; guests keep running):`);
  const sock = await connectConsole(socket);
  await attachConsole(sock, { input: false });
  progress.line(`console of ${id} closed`);
}

/** `--metrics-port`: a port both it and the next one fit in (1-65534), or undefined. */
export function parseMetricsPort(v: string | undefined): number | undefined {
  if (v === undefined) return undefined;
  const n = Number(v);
  if (!/^\d+$/.test(v) || n < 1 || n > 65534)
    throw new Error(`--metrics-port: ${JSON.stringify(v)} is not a port from 1 to 65534`);
  return n;
}
