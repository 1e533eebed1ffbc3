/**
 * The launcher's passt (virt-launcher/passt-process.ts): its argv built from checked values
 * only; a real Debian passt started in a network namespace of the test's (veth pair inside
 * it, a default route, nothing on the host) as the launcher starts it, with its pid file
 * and socket, started once, and gone with its files after stop(); a passt that exits before
 * listening is reported with its words and leaves no files; nothing started where the
 * driver reports libvirt's passt backend; and the launcher stops it when the domain fails
 * to start and when it exits.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../src/api';
import { VirtLauncher } from '../../../src/controllers/virt-launcher/launcher';
import { PasstBackend, passtArgs } from '../../../src/controllers/virt-launcher/passt-process';
import { FakeDriver, type HypervisorDriver } from '../../../src/drivers';
import { integration } from '../../support/integration';

const iface = { name: 'default', passtBinding: {}, ports: [{ port: 8080 }] };
const uid = '41111111-2222-4333-8444-555555555555';
const vmi = (interfaces: object[] = [iface]): VirtualMachineInstance => ({
  metadata: { name: 'vm1', namespace: 'ns1', uid },
  spec: {
    domain: { devices: { interfaces: interfaces as never }, resources: { requests: { memory: '64Mi' } } },
    networks: [{ name: 'default', pod: {} }],
  },
});
/** A driver that only answers probe(), with the interface backends given. */
const probing = (interfaceBackends?: string[]) =>
  ({ probe: async () => ({ interfaceBackends }) }) as unknown as HypervisorDriver;

describe('passt arguments', () => {
  it('are the checked socket, pid file, interface, ports and account', () => {
    expect(passtArgs({ dir: '/run/p/u', iface, path: 'i', runAs: { uid: 107, gid: 107 } })).toEqual([
      '--foreground',
      '--one-off',
      '--socket',
      '/run/p/u/passt.sock',
      '--pid',
      '/run/p/u/passt.pid',
      '--interface',
      'eth0',
      '--tcp-ports',
      '8080',
      '--runas',
      '107:107',
    ]);
    expect(
      passtArgs({ dir: '/p', iface: { name: 'default', passtBinding: {} }, path: 'i' }).slice(8),
    ).toEqual(['--tcp-ports', 'all', '--udp-ports', 'all']);
  });

  it('refuse what passt must not be given', () => {
    const args = (o: object) => () => passtArgs({ dir: '/p', iface, path: 'spec.x', ...o });
    expect(args({ podInterface: 'eth0 -t all' })).toThrow('passt: "eth0 -t all" is not an interface name');
    expect(args({ dir: `/${'d'.repeat(100)}` })).toThrow('is not an absolute path of at most 107 bytes');
    expect(args({ dir: 'relative' })).toThrow('passt: socket "relative/passt.sock" is not an absolute path');
    expect(args({ dir: '/p\n--tcp-ports all' })).toThrow('is not an absolute path');
    expect(args({ runAs: { uid: -1, gid: 0 } })).toThrow('passt: -1:0 is not a numeric user and group');
    expect(args({ iface: { ...iface, ports: [{ port: 0 }] } })).toThrow(
      'spec.x.ports[0].port: 0 is not a port number (1-65535)',
    );
  });
});

const root = process.getuid?.() === 0;
const havePasst = spawnSync('passt', ['--version']).status === 0;
const runPasst = integration(
  "the launcher's passt",
  root && havePasst,
  !root ? 'needs root (network namespaces)' : "needs Debian's passt (scripts/setup-host.sh installs it)",
);
describe.runIf(runPasst)('the launcher’s passt (real passt in a namespace)', () => {
  const ns = `kvtspp${process.pid % 100000}`;
  let dir: string;
  let wrapper: string;
  const logs: string[] = [];

  beforeAll(() => {
    dir = mkdtempSync(join(tmpdir(), 'kvts-passtp-'));
    chmodSync(dir, 0o755);
    const ip = (...a: string[]) => execFileSync('ip', ['-n', ns, ...a]);
    execFileSync('ip', ['netns', 'add', ns]);
    ip('link', 'set', 'lo', 'up');
    ip('link', 'add', 'eth0', 'type', 'veth', 'peer', 'name', 'eth1');
    ip('addr', 'add', '10.251.7.2/24', 'dev', 'eth0');
    ip('link', 'set', 'eth0', 'up');
    ip('link', 'set', 'eth1', 'up');
    ip('route', 'add', 'default', 'via', '10.251.7.1');
    // The launcher runs inside the pod's namespace; this test does not, so passt is entered there.
    wrapper = join(dir, 'passt-in-ns');
    writeFileSync(wrapper, `#!/bin/sh\nexec nsenter --net=/run/netns/${ns} -- passt "$@"\n`, { mode: 0o755 });
  });

  afterAll(() => {
    spawnSync('ip', ['netns', 'del', ns]);
    rmSync(dir, { recursive: true, force: true });
    expect(spawnSync('ip', ['netns', 'list'], { encoding: 'utf8' }).stdout).not.toContain(ns);
  });

  it('starts once as QEMU’s account with its pid file and socket, and stop() leaves nothing', async () => {
    const p = new PasstBackend({
      privateDir: join(dir, 'private'),
      qemuUser: { uid: 107, gid: 107 },
      binary: wrapper,
      log: (m) => logs.push(m),
    });
    await p.start(vmi(), probing(['default']));
    const pid = p.pid ?? 0;
    expect(pid).toBeGreaterThan(0);
    const vmiDir = join(dir, 'private', uid);
    expect(statSync(vmiDir).uid).toBe(107);
    // passt writes its pid file just after it announces its socket.
    await expect
      .poll(() =>
        existsSync(join(vmiDir, 'passt.pid')) ? readFileSync(join(vmiDir, 'passt.pid'), 'utf8').trim() : '',
      )
      .toBe(String(pid));
    expect(statSync(join(vmiDir, 'passt.sock')).isSocket()).toBe(true);
    expect(statSync(join(vmiDir, 'passt.sock')).uid).toBe(107);
    expect(readFileSync(`/proc/${pid}/status`, 'utf8')).toMatch(/^Uid:\s+107\s/m);
    // The forwarded port is bound in the namespace (by passt), not on the host.
    expect(execFileSync('ip', ['netns', 'exec', ns, 'ss', '-Htln'], { encoding: 'utf8' })).toMatch(/:8080\b/);
    await p.start(vmi(), probing(['default']));
    expect(p.pid).toBe(pid);
    await p.stop();
    expect(p.pid).toBeUndefined();
    expect(existsSync(`/proc/${pid}`)).toBe(false);
    expect(existsSync(join(vmiDir, 'passt.sock'))).toBe(false);
    expect(existsSync(join(vmiDir, 'passt.pid'))).toBe(false);
  });

  it('reports a passt that exits before listening, with what it said, and leaves no files', async () => {
    const failing = join(dir, 'passt-fails');
    writeFileSync(
      failing,
      '#!/bin/sh\necho "Failed to send 9 bytes to syslog"\necho "External interface not usable" >&2\ntouch "$4"\nexit 1\n',
      {
        mode: 0o755,
      },
    );
    const p = new PasstBackend({
      privateDir: join(dir, 'private2'),
      binary: failing,
      log: (m) => logs.push(m),
    });
    await expect(p.start(vmi(), probing())).rejects.toThrow(
      'passt exited (code 1) before listening: External interface not usable',
    );
    expect(existsSync(join(dir, 'private2', uid, 'passt.sock'))).toBe(false);
    expect(p.pid).toBeUndefined();
  });

  it('starts nothing where libvirt has the passt backend, or for a VMI without passt', async () => {
    const p = new PasstBackend({
      privateDir: join(dir, 'private3'),
      binary: wrapper,
      log: (m) => logs.push(m),
    });
    await p.start(vmi(), probing(['default', 'passt']));
    expect(p.pid).toBeUndefined();
    const q = new PasstBackend({
      privateDir: join(dir, 'private4'),
      binary: wrapper,
      log: (m) => logs.push(m),
    });
    await q.start(vmi([{ name: 'default', masquerade: {} }]), probing());
    expect(q.pid).toBeUndefined();
    expect(existsSync(join(dir, 'private3', uid))).toBe(false);
    expect(existsSync(join(dir, 'private4', uid))).toBe(false);
  });
});

describe('the launcher and its network backends', () => {
  it('starts them before each sync and stops them when the domain fails to start and on exit', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'kvts-passtl-'));
    const calls: string[] = [];
    const driver = new FakeDriver();
    const launcher = new VirtLauncher({
      namespace: 'ns1',
      name: 'vm1',
      uid,
      gracePeriodSeconds: 1,
      socketDir: dir,
      connectDriver: async () => driver,
      syncOptions: { useEmulation: true },
      networkBackends: {
        start: async (v) => {
          calls.push(`start ${v.metadata?.name}`);
        },
        stop: async () => {
          calls.push('stop');
        },
      },
      log: () => {},
    });
    try {
      await launcher.start();
      const req = { vmi: { vmiJson: Buffer.from(JSON.stringify(vmi())) } };
      driver.failNext('sync');
      await expect(launcher.syncVirtualMachine(req as never)).rejects.toThrow('injected failure of sync');
      expect(calls).toEqual(['start vm1', 'stop']);
      await launcher.syncVirtualMachine(req as never);
      expect(calls).toEqual(['start vm1', 'stop', 'start vm1']);
      await launcher.exit(0);
      expect(calls).toEqual(['start vm1', 'stop', 'start vm1', 'stop']);
    } finally {
      await launcher.exit(0);
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
