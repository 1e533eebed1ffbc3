import { mkdtemp, readdir, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  type DomainEventNotification,
  LauncherClient,
  LauncherCommandError,
  type LauncherServer,
  type LauncherService,
  launcherSocketPath,
  NotifySender,
  type NotifyServer,
  podEmptyDirPath,
  serveLauncher,
  serveNotify,
} from '../../../src/controllers/launcher-protocol';

describe('handler-launcher protocol over a unix socket', () => {
  let dir: string;
  let server: LauncherServer;
  let client: LauncherClient;
  const synced: unknown[] = [];
  const cpuSyncs: unknown[] = [];
  const graces: number[] = [];
  const freezes: number[] = [];
  const execs: string[][] = [];
  const dumps: string[] = [];

  const impl: LauncherService = {
    syncVirtualMachine: async (req) => {
      synced.push(JSON.parse(Buffer.from(req.vmi!.vmiJson).toString()));
    },
    pauseVirtualMachine: async () => {
      throw new Error('Requested operation is not valid: domain is not running');
    },
    unpauseVirtualMachine: async () => {},
    freezeVirtualMachine: async (req) => {
      freezes.push(req.unfreezeTimeoutSeconds);
    },
    unfreezeVirtualMachine: async () => {
      throw new Error('guest agent is not connected');
    },
    getScreenshot: async () => ({ mime: 'image/png', data: Buffer.from([0x89, 0x50, 0x4e, 0x47]) }),
    resetVirtualMachine: async () => {},
    softRebootVirtualMachine: async () => {},
    shutdownVirtualMachine: async (req) => {
      graces.push(Number(req.options?.gracePeriodSeconds ?? -1));
    },
    killVirtualMachine: async () => {},
    deleteVirtualMachine: async () => {},
    migrateVirtualMachine: async () => {},
    syncMigrationTarget: async () => {},
    cancelVirtualMachineMigration: async () => {},
    syncVirtualMachineCPUs: async (req) => {
      cpuSyncs.push(JSON.parse(Buffer.from(req.vmi!.vmiJson).toString()));
    },
    syncVirtualMachineMemory: async (req) => {
      cpuSyncs.push({ memory: JSON.parse(Buffer.from(req.vmi!.vmiJson).toString()) });
    },
    getDomain: async () => JSON.stringify({ name: 'default_vm1', state: 'Running' }),
    getDomainStats: async () => undefined,
    getGuestInfo: async () => undefined,
    ping: async () => {},
    getSevInfo: async () => Buffer.from('sev'),
    getLaunchMeasurement: async () => Buffer.from([1, 2, 3]),
    injectLaunchSecret: async () => {},
    exec: async (req) => {
      execs.push([req.domainName, req.Command, ...req.Args, String(req.timeoutSeconds)]);
      if (req.Command === 'missing') throw new Error('guest-exec: No such file or directory');
      return { exitCode: req.Command === 'false' ? 1 : 0, stdout: 'out\n' };
    },
    guestPing: async (req) => {
      if (req.domainName !== 'default_vm1') throw new Error('Guest agent is not responding');
    },
    virtualMachineMemoryDump: async (req) => {
      if (req.dumpPath.includes('..'))
        throw new Error('memory dump path: must be an absolute, normalized path');
      dumps.push(req.dumpPath);
    },
  };

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kvts-proto-'));
    server = await serveLauncher(dir, impl);
    client = new LauncherClient(server.socketPath, { timeoutMs: 5_000 });
  });
  afterAll(async () => {
    client.close();
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('serves launcher-sock with mode 0600 and no init socket left behind', async () => {
    expect(await readdir(dir)).toEqual(['launcher-sock']);
    const st = await stat(server.socketPath);
    expect(st.isSocket()).toBe(true);
    expect(st.mode & 0o777).toBe(0o600);
  });

  it('carries the VMI as JSON to SyncVirtualMachine', async () => {
    await client.syncVirtualMachine({ metadata: { name: 'vm1', namespace: 'default' } });
    expect(synced).toEqual([{ metadata: { name: 'vm1', namespace: 'default' } }]);
  });

  it('carries the VMI to SyncVirtualMachineCPUs and SyncVirtualMachineMemory (hotplug)', async () => {
    const vmi = { metadata: { name: 'vm1' }, spec: { domain: { cpu: { sockets: 2, maxSockets: 4 } } } };
    await client.syncVirtualMachineCPUs(vmi);
    expect(cpuSyncs).toEqual([vmi]);
    await client.syncVirtualMachineMemory(vmi);
    expect(cpuSyncs).toEqual([vmi, { memory: vmi }]);
  });

  it("reports the launcher's failure message as a LauncherCommandError", async () => {
    const err = await client.pauseVirtualMachine({}).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(LauncherCommandError);
    expect((err as Error).message).toBe(
      'PauseVirtualMachine: Requested operation is not valid: domain is not running',
    );
  });

  it('passes the grace period of a shutdown', async () => {
    await client.shutdownVirtualMachine({}, 45);
    expect(graces).toEqual([45]);
  });

  it('carries the unfreeze timeout, a freeze failure, and the screenshot bytes', async () => {
    await client.freezeVirtualMachine({}, 300);
    expect(freezes).toEqual([300]);
    const err = await client.unfreezeVirtualMachine({}).catch((e: unknown) => e);
    expect((err as Error).message).toBe('UnfreezeVirtualMachine: guest agent is not connected');
    const shot = await client.getScreenshot({});
    expect(shot.mime).toBe('image/png');
    expect([...shot.data]).toEqual([0x89, 0x50, 0x4e, 0x47]);
  });

  it('returns the domain and the binary SEV payloads', async () => {
    expect(await client.getDomain()).toEqual({ name: 'default_vm1', state: 'Running' });
    expect(await client.getDomainStats()).toBeUndefined();
    expect(Buffer.from(await client.getLaunchMeasurement({})).toJSON().data).toEqual([1, 2, 3]);
    expect(Buffer.from(await client.getSevInfo()).toString()).toBe('sev');
  });

  it("carries virt-probe's Exec (exit code, stdout, a failure) and GuestPing", async () => {
    expect(await client.exec('default_vm1', 'cat', ['/ready'], 2)).toEqual({ exitCode: 0, stdout: 'out\n' });
    expect((await client.exec('default_vm1', 'false', [], 1)).exitCode).toBe(1);
    expect(execs[0]).toEqual(['default_vm1', 'cat', '/ready', '2']);
    const err = await client.exec('default_vm1', 'missing', [], 1).catch((e: unknown) => e);
    expect((err as Error).message).toBe('Exec: guest-exec: No such file or directory');
    await client.guestPing('default_vm1', 1);
    const ping = await client.guestPing('default_vm2', 1).catch((e: unknown) => e);
    expect((ping as Error).message).toBe('GuestPing: Guest agent is not responding');
  });

  it('carries the memory dump path and the refusal of a bad one', async () => {
    const path = '/var/run/kubevirt/hotplug-disks/dump/vm1-dump-20261204-211700.memory.dump';
    await client.virtualMachineMemoryDump({ metadata: { name: 'vm1' } }, path);
    expect(dumps).toEqual([path]);
    await expect(client.virtualMachineMemoryDump({}, '/x/../y')).rejects.toThrow(
      'VirtualMachineMemoryDump: memory dump path: must be an absolute, normalized path',
    );
  });

  it('answers version negotiation', async () => {
    const info = await client.getInfo();
    expect(info.supportedCmdVersions).toEqual(['v1']);
    expect(info.supportedKubeVirtAPIVersions).toEqual(['kubevirt.io/v1']);
  });

  it('fails with an error, not a hang, when no launcher listens', async () => {
    const dead = new LauncherClient(join(dir, 'nobody-sock'), { timeoutMs: 1_000 });
    await expect(dead.ping()).rejects.toBeInstanceOf(LauncherCommandError);
    dead.close();
  });
});

describe('notify service', () => {
  let dir: string;
  let server: NotifyServer;
  const events: DomainEventNotification[] = [];

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kvts-notify-'));
    server = await serveNotify(join(dir, 'domain-notify.sock'), { onDomainEvent: (e) => events.push(e) });
  });
  afterAll(async () => {
    await server.close();
    await rm(dir, { recursive: true, force: true });
  });

  it('delivers a domain event from a launcher to the handler', async () => {
    const sender = new NotifySender(server.socketPath);
    const err = await sender.sendDomainEvent({
      eventType: 'MODIFIED',
      domain: { name: 'ns_vm', state: 'Paused' },
    });
    sender.close();
    expect(err).toBeUndefined();
    expect(events).toEqual([
      { eventType: 'MODIFIED', domain: { name: 'ns_vm', state: 'Paused' }, status: undefined },
    ]);
    expect((await stat(server.socketPath)).mode & 0o777).toBe(0o600);
  });

  it('delivers an event sent before the socket exists once it appears, and right after a failed one', async () => {
    // The agent's pipe in a launcher pod appears after the launcher started: an event sent
    // earlier waits for it (within its deadline), and a channel that once found no socket
    // does not keep failing for gRPC's default 1 s backoff after it is there.
    const path = join(dir, 'late.sock');
    const got: DomainEventNotification[] = [];
    const sender = new NotifySender(path);
    try {
      const early = await sender.sendDomainEvent({ eventType: 'ADDED', domain: { name: 'ns_a' } }, 150);
      expect(early?.message).toMatch(/DEADLINE_EXCEEDED/);
      const t0 = performance.now();
      const pending = sender.sendDomainEvent({ eventType: 'MODIFIED', domain: { name: 'ns_b' } }, 5_000);
      await new Promise((r) => setTimeout(r, 100));
      const late = await serveNotify(path, { onDomainEvent: (e) => got.push(e) });
      try {
        expect(await pending).toBeUndefined();
        // Well under gRPC's default first reconnect backoff (1 s) after the server came up.
        expect(performance.now() - t0).toBeLessThan(900);
        expect(got.map((e) => (e.domain as { name: string }).name)).toEqual(['ns_b']);
      } finally {
        await late.close();
      }
    } finally {
      sender.close();
    }
  });
});

describe('socket paths', () => {
  it("uses kubelet's emptyDir layout", () => {
    expect(launcherSocketPath('/var/lib/kubelet/pods', 'abc-123')).toBe(
      '/var/lib/kubelet/pods/abc-123/volumes/kubernetes.io~empty-dir/sockets/launcher-sock',
    );
  });
  it('rejects a pod uid or volume that would escape the directory', () => {
    expect(() => launcherSocketPath('/p', '../etc')).toThrow(/pod uid "..\/etc" is not a plain token/);
    expect(() => podEmptyDirPath('/p', 'u1', 'a/b')).toThrow(/not a DNS-1123 label/);
  });
});
