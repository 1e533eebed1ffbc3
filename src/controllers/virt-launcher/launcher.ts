/**
 * virt-launcher: one per VMI. It serves the handler-launcher protocol on the pod's
 * sockets directory, runs the VMI's domain through a hypervisor driver, reports every
 * domain change to the node agent's notify pipe, relays the serial console and VNC as
 * unix sockets next to its command socket, and exits once the domain is gone. A guest
 * that powered off is never started again by the same launcher.
 */
import { mkdir, readlink } from 'node:fs/promises';
import { isAbsolute } from 'node:path';
import type { VirtualMachineInstance } from '../../api';
import { type DomainRef, domainName, type HypervisorDriver } from '../../drivers/driver';
import {
  type ExecRequest,
  type FreezeRequest,
  type GuestPingRequest,
  type InjectLaunchSecretRequest,
  type LauncherServer,
  type LauncherService,
  type MemoryDumpRequest,
  type MigrationRequest,
  serveLauncher,
  type VMIRequest,
} from '../launcher-protocol';
import type { LauncherDomain } from '../launcher-protocol/domain-report';
import { toGuestAgentInfo } from '../launcher-protocol/guest-agent-report';
import { AgentCredentials } from './agent-credentials';
import { domainFields } from './domain-fields';
import { DomainReporter } from './domain-reporter';
import { ACTIVE_STATES, LauncherDomainOps } from './domain-rpcs';
import { LauncherGuestOps } from './freeze-screenshot-rpcs';
import { GuestAgentPoller } from './guest-agent-poller';
import { GuestEndpoints } from './guest-endpoints';
import { GuestSync } from './guest-sync';
import type { VirtLauncherOptions } from './launcher-options';
import { LauncherMemoryDump } from './memory-dump-rpc';
import { LauncherMigrations } from './migration-rpcs';
import { LauncherProbeOps } from './probe-rpcs';
import { parseRequestVmi } from './vmi-request';
import { accessCredentialSecretDir } from './volume-sources';

export type { VirtLauncherOptions } from './launcher-options';

/** One launcher. `start()` it; `exited` resolves with the exit code once it is done. */
export class VirtLauncher implements LauncherService {
  readonly ref: DomainRef;
  readonly domainName: string;
  /** Resolves with the process exit code once the launcher has shut down. */
  readonly exited: Promise<number>;
  private resolveExit!: (code: number) => void;
  private driver: HypervisorDriver | undefined;
  private server: LauncherServer | undefined;
  private readonly endpoints: GuestEndpoints;
  /** The domain's last state, whether it ran or ended, and its reports (./domain-reporter). */
  private readonly state: DomainReporter;
  private stopping = false;
  private readonly log: (m: string) => void;
  private agentPoller: GuestAgentPoller | undefined;
  /** The guest agent: read while the guest runs; a change is reported like a domain change. */
  private get agent(): GuestAgentPoller {
    this.agentPoller ??= new GuestAgentPoller({
      ref: this.ref,
      driver: () => this.driver,
      active: () => !this.state.finished && !!this.state.last && ACTIVE_STATES.has(this.state.last.state),
      onChange: () => this.state.modified(),
      onPolled: (connected) => this.credentials.sync(connected),
      pollMs: this.opts.agentPollMs,
      connectPollMs: this.opts.agentConnectPollMs,
      log: (m) => this.log(m),
    });
    return this.agentPoller;
  }
  private readonly migrations: LauncherMigrations;
  /** Starting the guest, and its live changes (./guest-sync). */
  private readonly guest: GuestSync;
  /** qemuGuestAgent SSH keys and passwords, applied on each agent poll. */
  private readonly credentials: AgentCredentials;

  constructor(private readonly opts: VirtLauncherOptions) {
    this.ref = { namespace: opts.namespace, name: opts.name };
    this.memoryDump = new LauncherMemoryDump({
      driver: () => this.mustDriver(),
      ref: () => this.ref,
      log: (m) => this.log(m),
      onChange: () => this.state.modified(),
      hostHotplugDir: opts.hotplugDir,
    });
    this.domainName = domainName(this.ref);
    this.exited = new Promise((r) => {
      this.resolveExit = r;
    });
    this.endpoints = new GuestEndpoints(opts.socketDir, (m) => this.log(m));
    this.log = opts.log ?? ((m) => process.stderr.write(`virt-launcher ${this.domainName}: ${m}\n`));
    this.credentials = new AgentCredentials({
      ref: this.ref,
      driver: () => this.driver,
      secretDir: opts.accessCredentialDir ?? accessCredentialSecretDir,
      onChange: () => this.state.modified(),
      log: (m) => this.log(m),
    });
    this.guest = new GuestSync({
      ref: this.ref,
      opts,
      setVmi: (vmi) => this.credentials.setVmi(vmi),
      changed: () => {
        if (this.state.reported) this.state.send('MODIFIED');
      },
      log: (m) => this.log(m),
    });
    this.migrations = new LauncherMigrations({
      ref: this.ref,
      subject: this.subject,
      socketDir: opts.socketDir,
      driver: () => this.mustDriver(),
      parseVmi: (req) => this.parseVmi(req),
      prepareVolumes: opts.prepareVolumes,
      prepareNetwork: opts.prepareNetwork,
      syncOptions: () => opts.syncOptions ?? {},
      pollMs: opts.migrationPollMs ?? 400,
      refresh: () => this.state.reportMigration(),
      log: (m) => this.log(m),
    });
    this.state = new DomainReporter({
      ref: this.ref,
      domainName: this.domainName,
      vmi: { kind: 'VirtualMachineInstance', namespace: opts.namespace, name: opts.name, uid: opts.uid },
      socketDir: opts.socketDir,
      driver: () => this.driver,
      connect: opts.connectDriver,
      replaceDriver: async (next) => {
        const old = this.driver;
        this.driver = next;
        await old?.close().catch(() => undefined);
      },
      pollAgent: () => void this.agent.poll(),
      exiting: () => this.exiting,
      migrations: this.migrations,
      endpoints: this.endpoints,
      attachDevices: () => this.attachDevices(),
      report: () => this.domain(),
      finalWaitMs: opts.finalWaitMs,
      exit: (code) => this.exit(code),
      log: (m) => this.log(m),
    });
  }

  /**
   * Connects the driver, adopts a domain that already runs (a launcher restarted in the
   * same pod), then serves the command socket: once `launcher-sock` exists the launcher
   * is ready.
   */
  async start(): Promise<void> {
    // socketDir may be shortDir()'s link to a directory that does not exist yet (a pod
    // root without its emptyDir): mkdir through a dangling link fails, so make the target.
    const target = await readlink(this.opts.socketDir).catch(() => this.opts.socketDir);
    await mkdir(isAbsolute(target) ? target : this.opts.socketDir, { recursive: true, mode: 0o700 });
    this.driver = await this.opts.connectDriver();
    await this.endpoints.listen();
    void this.state.watch(this.driver);
    // Launcher pods never restart (restartPolicy Never), so a domain of this name that is
    // already there was left by the launcher of an earlier VMI that died with it running:
    // in a real pod QEMU would have died with that launcher's cgroup. Remove it.
    const existing = await this.driver.getDomain(this.ref);
    if (existing) {
      this.log(`removing domain ${existing.name} (${existing.state}) left by an earlier launcher`);
      await this.driver.delete(this.ref);
    }
    this.server = await serveLauncher(this.opts.socketDir, this);
    this.agent.start();
    this.log('serving');
  }

  /** What GetDomain answers. */
  domain(): LauncherDomain | undefined {
    const d = this.state.last;
    if (!d && !this.state.finished) return undefined;
    return {
      ...domainFields(this.domainName, this.opts.uid, d, this.state.finished),
      guestAgent: this.agent.report,
      ...(this.credentials.report ? { accessCredential: this.credentials.report } : {}),
      ...(this.guestOps.frozen ? { fsFreezeStatus: 'frozen' as const } : {}),
      ...this.endpoints.report(),
      interfaces: this.opts.networkReport?.(),
      ...(this.guest.hotplug.attached.length ? { hotplugVolumes: [...this.guest.hotplug.attached] } : {}),
      ...(this.guest.nics.have ? { secondaryInterfaces: [...this.guest.nics.have] } : {}),
      ...(this.memoryDump.report ? { memoryDump: this.memoryDump.report } : {}),
      ...this.migrations.report(d),
    };
  }

  /** The domain XML a migration target prepared (SyncMigrationTarget), if any. */
  get preparedMigrationXml(): string | undefined {
    return this.migrations.preparedXml;
  }

  /** The serial output so far (tests, and the console's replay). */
  get consoleOutput(): string {
    return this.endpoints.consoleOutput;
  }

  private mustDriver(): HypervisorDriver {
    if (!this.driver) throw new Error('launcher: not started');
    return this.driver;
  }

  private parseVmi(req: Pick<VMIRequest, 'vmi'>): VirtualMachineInstance {
    return parseRequestVmi(req, this.opts);
  }

  // --- LauncherService ---

  async syncVirtualMachine(req: VMIRequest): Promise<void> {
    const parsed = this.parseVmi(req);
    if (this.state.finished || this.stopping) return; // never start a guest again once it ended
    // A migration target gets its guest from the source, never by starting it here.
    if (this.migrations.incoming && !this.migrations.incoming.completed) return;
    // A migration source's guest is its migration's, and gone once that succeeded.
    if (this.migrations.sending) return;
    const driver = this.mustDriver();
    const running = await driver.getDomain(this.ref);
    if (await this.guest.sync(driver, parsed, !!running && ACTIVE_STATES.has(running.state)))
      this.state.everRan = true;
    await this.attachDevices();
    await this.state.refresh();
  }

  /**
   * Starts a shutdown and returns at once: 0 s kills the guest, more is an ACPI shutdown
   * killed when the grace period runs out; a call with a shorter grace period while one
   * runs brings its kill forward. The grace period is the request's (the handler always
   * sends the VMI's), else the VMI's, else the pod's; 0 is a grace period, not "unset".
   */
  async shutdownVirtualMachine(req: VMIRequest): Promise<void> {
    const vmi = this.parseVmi(req);
    const grace =
      req.options?.gracePeriodSeconds ??
      vmi.spec?.terminationGracePeriodSeconds ??
      this.opts.gracePeriodSeconds;
    void this.ops.startShutdown(grace, (m) => this.log(m));
  }

  /** Forgets the domain (killing it if it still runs) and exits. */
  async deleteVirtualMachine(req: VMIRequest): Promise<void> {
    this.parseVmi(req);
    await this.mustDriver().delete(this.ref);
    this.state.finished = this.state.finished || this.state.everRan;
    await this.state.refresh();
    setImmediate(() => void this.exit(0));
  }

  private get subject(): string {
    return `VirtualMachineInstance ${this.opts.namespace}/${this.opts.name}`;
  }

  /** Source side: starts sending the guest to the target (see ./migration-rpcs). */
  migrateVirtualMachine(req: MigrationRequest): Promise<void> {
    return this.migrations.migrate(req);
  }

  /** Target side: prepares this pod for the incoming guest (see ./migration-rpcs). */
  syncMigrationTarget(req: VMIRequest): Promise<void> {
    return this.migrations.prepareTarget(req);
  }

  /** Source side: aborts the running migration; the guest keeps running here. */
  cancelVirtualMachineMigration(req: VMIRequest): Promise<void> {
    return this.migrations.cancel(req);
  }

  async getDomain(): Promise<string | undefined> {
    const d = this.domain();
    return d ? JSON.stringify(d) : undefined;
  }

  async getDomainStats(): Promise<string | undefined> {
    const last = this.state.last;
    if (!last || !ACTIVE_STATES.has(last.state)) return undefined;
    return JSON.stringify(await this.mustDriver().getStats(this.ref));
  }

  /** Upstream's VirtualMachineInstanceGuestAgentInfo JSON; undefined while no agent answers. */
  async getGuestInfo(): Promise<string | undefined> {
    const info = await this.agent.guestInfo();
    return info ? JSON.stringify(toGuestAgentInfo(info)) : undefined;
  }

  async ping(): Promise<void> {}

  // Direct domain operations (see ./domain-rpcs).
  private readonly ops = new LauncherDomainOps({
    driver: () => this.mustDriver(),
    ref: () => this.ref,
    parse: (r) => this.parseVmi(r),
    refresh: () => this.state.refresh(),
  });
  pauseVirtualMachine = (r: VMIRequest) => this.ops.pause(r);
  unpauseVirtualMachine = (r: VMIRequest) => this.ops.unpause(r);
  resetVirtualMachine = (r: VMIRequest) => this.ops.reset(r);
  softRebootVirtualMachine = (r: VMIRequest) => this.ops.softReboot(r);
  killVirtualMachine = (r: VMIRequest) => this.ops.kill(r);
  syncVirtualMachineCPUs = (r: VMIRequest) => this.ops.syncCpus(r);
  syncVirtualMachineMemory = (r: VMIRequest) => this.ops.syncMemory(r);
  getSevInfo = () => this.ops.sevInfo();
  getLaunchMeasurement = (r: VMIRequest) => this.ops.launchMeasurement(r);
  injectLaunchSecret = (r: InjectLaunchSecretRequest) => this.ops.injectLaunchSecret(r);

  // Filesystem freeze and the screenshot (see ./freeze-screenshot-rpcs).
  private readonly guestOps = new LauncherGuestOps(
    () => this.mustDriver(),
    () => this.ref,
    (m) => this.log(m),
    () => this.state.modified(),
  );
  freezeVirtualMachine = (r: FreezeRequest) =>
    this.guestOps.freeze(this.parseVmi(r), r.unfreezeTimeoutSeconds);
  unfreezeVirtualMachine = (r: VMIRequest) => this.guestOps.unfreeze(this.parseVmi(r));
  getScreenshot = (r: VMIRequest) => this.guestOps.screenshot(this.parseVmi(r));

  // Memory dumps into a mounted memory dump volume (see ./memory-dump-rpc); made in the
  // constructor, which has the options (the pod's hotplug directory at its host path).
  private readonly memoryDump: LauncherMemoryDump;
  virtualMachineMemoryDump = async (r: MemoryDumpRequest) => {
    this.parseVmi(r);
    await this.memoryDump.request(r.dumpPath);
  };

  // virt-probe's calls (see ./probe-rpcs).
  private readonly probes = new LauncherProbeOps(
    () => this.mustDriver(),
    () => this.ref,
  );
  exec = (r: ExecRequest) => this.probes.exec(r);
  guestPing = (r: GuestPingRequest) => this.probes.guestPing(r);

  // --- lifecycle ---

  /**
   * Graceful stop (SIGTERM): ACPI shutdown, kill when the grace period runs out, forget
   * the domain, exit.
   */
  async stop(graceSeconds = this.opts.gracePeriodSeconds): Promise<number> {
    if (!this.stopping && this.driver) {
      this.stopping = true;
      try {
        // The same shutdown as the handler's: a later, shorter grace period still shortens it.
        await this.ops.startShutdown(graceSeconds, (m) => this.log(m));
        await this.driver.delete(this.ref);
        this.state.finished = true;
        await this.state.refresh();
      } catch (e) {
        this.log(`stop: ${(e as Error).message}`);
      }
      await this.exit(0);
    }
    return this.exited;
  }

  private attachDevices(): Promise<void> {
    return this.endpoints.attach(this.mustDriver(), this.ref);
  }

  private exiting = false;

  /** Stops serving and releases everything; the domain is left as it is. */
  async exit(code: number): Promise<void> {
    if (this.exiting) return;
    this.exiting = true;
    this.state.stop();
    this.agent.stop();
    this.guestOps.close();
    await this.state.notify.flush(2_000);
    await this.server?.close().catch(() => undefined);
    await this.endpoints.close();
    this.state.notify.close();
    await this.driver?.close().catch(() => undefined);
    await this.opts.networkBackends
      ?.stop()
      .catch((e) => this.log(`network backends: ${(e as Error).message}`));
    await this.opts.onExit?.().catch((e) => this.log(`exit: ${(e as Error).message}`));
    this.resolveExit(code);
  }
}
