/**
 * The launcher's VirtualMachineMemoryDump RPC (upstream's storage manager `MemoryDump`):
 * the node agent names a file in a memory dump volume it mounted into the pod's hotplug
 * directory (`<hotplug dir>/<volume>/<file>.memory.dump`); the launcher answers at once
 * and dumps the guest's memory there in the background through the driver's
 * `memoryDump`, one dump at a time. A request for the file already being (or already)
 * dumped is a no-op, so the handler may repeat it. Earlier dumps in the volume are removed
 * first (upstream's removePreviousMemoryDump). The state goes into the domain report
 * (LauncherDomain.memoryDump) for the handler's `volumeStatus[].memoryDumpVolume`.
 */
import { readdir, rm } from 'node:fs/promises';
import { basename, dirname, isAbsolute, join, normalize } from 'node:path';
import { status } from '@grpc/grpc-js';
import type { DomainRef, HypervisorDriver } from '../../drivers/driver';
import { LAUNCHER_DIRS } from '../common/launcher-args';
import type { LauncherMemoryDumpState } from '../launcher-protocol/domain-report';
import { LauncherRpcError } from '../launcher-protocol/rpc-error';

const DNS_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DUMP_FILE = /^[A-Za-z0-9][A-Za-z0-9._-]*\.memory\.dump$/;

export interface LauncherMemoryDumpOptions {
  driver: () => HypervisorDriver;
  ref: () => DomainRef;
  log: (m: string) => void;
  /** Called when the state changes (the launcher reports its domain again). */
  onChange: () => void;
  /** The pod's hotplug directory as the node agent names it (default upstream's `/var/run/kubevirt/hotplug-disks`). */
  podHotplugDir?: string;
  /**
   * Where that directory is for this process and its libvirt (default the same): local
   * mode's launchers see the pod's directories at host paths (launcher-paths.ts).
   */
  hostHotplugDir?: string;
  now?: () => Date;
}

export class LauncherMemoryDump {
  private state: LauncherMemoryDumpState | undefined;
  private running = false;

  constructor(private readonly o: LauncherMemoryDumpOptions) {}

  /** What the domain report carries. */
  get report(): LauncherMemoryDumpState | undefined {
    return this.state ? { ...this.state } : undefined;
  }

  private get subject(): string {
    const r = this.o.ref();
    return `VirtualMachineInstance ${r.namespace}/${r.name}`;
  }

  /**
   * The dump path checked (a `*.memory.dump` file directly in a volume's directory of the
   * pod's hotplug dir), as this process reaches it.
   */
  private checkPath(dumpPath: string): string {
    const dir = this.o.podHotplugDir ?? LAUNCHER_DIRS.hotplugDisks;
    const p = normalize(dumpPath);
    const bad = (why: string) =>
      new LauncherRpcError(
        status.INVALID_ARGUMENT,
        `${this.subject}: memory dump path ${JSON.stringify(dumpPath.slice(0, 300))}: ${why}`,
      );
    if (!isAbsolute(dumpPath) || p !== dumpPath) throw bad('must be an absolute, normalized path');
    if (dirname(dirname(p)) !== dir) throw bad(`must be <volume>/<file> in ${dir}`);
    if (!DNS_LABEL.test(basename(dirname(p)))) throw bad('the volume directory is not a DNS-1123 label');
    if (!DUMP_FILE.test(basename(p))) throw bad('the file name must end in .memory.dump');
    return this.o.hostHotplugDir ? join(this.o.hostHotplugDir, basename(dirname(p)), basename(p)) : p;
  }

  /** VirtualMachineMemoryDump: starts the dump unless this file is (or was) dumped already. */
  async request(dumpPath: string): Promise<void> {
    const path = this.checkPath(dumpPath);
    const driver = this.o.driver();
    if (!driver.memoryDump)
      throw new LauncherRpcError(
        status.UNIMPLEMENTED,
        `${this.subject}: memory dumps are not available: the ${driver.name} driver cannot dump a guest's memory`,
      );
    if (this.running) {
      this.o.log(`memory dump to ${this.state?.fileName} in progress; ${basename(path)} not started`);
      return;
    }
    if (this.state?.fileName === basename(path)) return;
    const now = () => (this.o.now?.() ?? new Date()).toISOString().replace(/\.\d{3}Z$/, 'Z');
    this.running = true;
    this.state = { fileName: basename(path), startTimestamp: now(), completed: false, failed: false };
    this.o.onChange();
    const dump = driver.memoryDump;
    void (async () => {
      const t0 = performance.now();
      try {
        await removePreviousDumps(dirname(path), basename(path));
        this.o.log(`starting memory dump to ${path}`);
        await dump.dump(this.o.ref(), path);
        this.o.log(`memory dump to ${path} completed in ${(performance.now() - t0).toFixed(0)} ms`);
        this.state = { ...(this.state as LauncherMemoryDumpState), completed: true, endTimestamp: now() };
      } catch (e) {
        const reason = `Domain memory dump failed: ${(e as Error).message}`;
        this.o.log(reason);
        this.state = {
          ...(this.state as LauncherMemoryDumpState),
          completed: true,
          failed: true,
          failureReason: reason,
          endTimestamp: now(),
        };
      } finally {
        this.running = false;
        this.o.onChange();
      }
    })();
  }
}

/** Removes earlier dumps (files with `memory.dump` in their name) from the volume's directory. */
async function removePreviousDumps(dir: string, keep: string): Promise<void> {
  for (const f of await readdir(dir).catch(() => [] as string[]))
    if (f.includes('memory.dump') && f !== keep) await rm(join(dir, f), { force: true });
}
