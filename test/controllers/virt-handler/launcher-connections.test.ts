import { spawn } from 'node:child_process';
import { chmodSync, chownSync, mkdirSync, statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { launcherSocketPath } from '../../../src/controllers/launcher-protocol';
import { NOTIFY_PIPE_SOCKET } from '../../../src/controllers/launcher-protocol/paths';
import { LauncherConnections } from '../../../src/controllers/virt-handler/launcher-connections';

const root = process.getuid?.() === 0;
const QEMU = 107;

describe.skipIf(!root)("virt-handler's notify pipe in a launcher pod", () => {
  let dir: string;
  let launcher: Server;
  let agent: Server;
  let conns: LauncherConnections;

  beforeEach(async () => {
    dir = await mkdtemp(join(tmpdir(), 'kvts-conns-'));
    chmodSync(dir, 0o755);
    const sock = launcherSocketPath(join(dir, 'pods'), 'pod-1');
    mkdirSync(dirname(sock), { recursive: true, mode: 0o777 });
    for (let d = dirname(sock); d.startsWith(dir); d = dirname(d)) chmodSync(d, 0o777);
    launcher = createServer();
    await new Promise<void>((r) => launcher.listen(sock, r));
    // A non-root launcher's socket is its user's (upstream's qemu, 107).
    chownSync(sock, QEMU, QEMU);
    agent = createServer((c) => c.end('agent\n'));
    await new Promise<void>((r) => agent.listen(join(dir, 'notify.sock'), r));
    conns = new LauncherConnections(join(dir, 'pods'), join(dir, 'notify.sock'));
  });
  afterEach(async () => {
    await conns.closeAll();
    await new Promise((r) => launcher.close(r));
    await new Promise((r) => agent.close(r));
    await rm(dir, { recursive: true, force: true });
  });

  it("belongs to the launcher's user, who can connect to it and reach the agent", async () => {
    await conns.get('pod-1');
    const pipe = join(dirname(launcherSocketPath(join(dir, 'pods'), 'pod-1')), NOTIFY_PIPE_SOCKET);
    const st = statSync(pipe);
    expect([st.uid, st.gid, st.mode & 0o777]).toEqual([QEMU, QEMU, 0o600]);
    // Connect as 107 (through the same short link the handler uses when the path is long).
    const path = join(dirname(conns.socketPath('pod-1')), NOTIFY_PIPE_SOCKET);
    // Not spawnSync: the pipe is served by this very process.
    const child = spawn(
      process.execPath,
      [
        '-e',
        `require('net').connect(${JSON.stringify(path)}).on('data', (d) => { process.stdout.write(d); process.exit(0); }).on('error', (e) => { console.error(e.code); process.exit(1); })`,
      ],
      { uid: QEMU, gid: QEMU, timeout: 10_000 },
    );
    const r = { stdout: '', stderr: '' };
    child.stdout.on('data', (d) => {
      r.stdout += d;
    });
    child.stderr.on('data', (d) => {
      r.stderr += d;
    });
    await new Promise((res) => child.on('exit', res));
    expect(r.stderr).toBe('');
    expect(r.stdout).toBe('agent\n');
  });
});
