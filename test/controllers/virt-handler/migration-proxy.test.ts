/**
 * virt-handler's migration proxy (upstream pkg/virt-handler/migration-proxy): a source
 * unix socket's connections reach the target launcher's unix socket through the two
 * handlers over mutual TLS with the KubeVirt CA. The stream on the wire starts with a TLS
 * ClientHello (plain only with disableTLS); a receiver whose certificate is not from the
 * CA, or not a handler's, gets nothing; a sender without the CA's client certificate is
 * refused before anything reaches the target launcher.
 */
import { mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createConnection, createServer, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import {
  LIBVIRT_BLOCK_MIGRATION_PORT,
  LIBVIRT_DIRECT_MIGRATION_PORT,
  MigrationProxyManager,
  type MigrationTlsMaterial,
  migrationDisablesTls,
  startSourceProxy,
  startTargetProxy,
} from '../../../src/controllers/virt-handler/migration-proxy';
import { backedUpLauncher, sendAndEnd } from '../../support/backed-up-launcher';
import { buildRelay, runningRelays } from '../../support/migration-relays';
import { type CertFiles, issue, makeCa } from '../../support/tls-certs';

const dir = mkdtempSync(join(tmpdir(), 'kvts-mproxy-'));
// The OpenSSL relay (migration-tls-relay.c) on either side or both: every case holds for
// each combination, so the relay and Node's TLS also speak to each other.
const tlsRelay = buildRelay('migration-tls-relay', dir);
const carriers = [
  { name: "Node's TLS", src: undefined, dst: undefined, skip: '' },
  {
    name: 'the OpenSSL relay on both sides',
    src: tlsRelay.path,
    dst: tlsRelay.path,
    skip: tlsRelay.skipReason,
  },
  { name: 'an OpenSSL relay sending to Node', src: tlsRelay.path, dst: undefined, skip: tlsRelay.skipReason },
  { name: 'Node sending to an OpenSSL relay', src: undefined, dst: tlsRelay.path, skip: tlsRelay.skipReason },
];
let ca: CertFiles;
let other: CertFiles;
const mat = (c: CertFiles, authority: CertFiles): MigrationTlsMaterial => ({
  cert: readFileSync(c.cert),
  key: readFileSync(c.key),
  ca: readFileSync(authority.cert),
});
let node: MigrationTlsMaterial; // handler serving certificate (node identity)
let client: MigrationTlsMaterial; // handler client certificate
let strangerNode: MigrationTlsMaterial; // node identity from another CA
let strangerClient: MigrationTlsMaterial; // client identity from another CA
let wrongName: MigrationTlsMaterial; // the CA's, but not a handler's node identity

/** The target launcher's socket: echoes upper-cased and records connections. */
let launcher: Server;
let launcherConnections = 0;
const launcherSock = join(dir, 'launcher.sock');

beforeAll(async () => {
  ca = makeCa(dir, 'kubevirt-ca');
  other = makeCa(dir, 'other-ca');
  node = mat(issue(dir, ca, 'node', 'kubevirt.io:system:node:virt-handler', ['IP:127.0.0.1']), ca);
  client = mat(issue(dir, ca, 'client', 'kubevirt.io:system:client:virt-handler'), ca);
  strangerNode = mat(
    issue(dir, other, 'snode', 'kubevirt.io:system:node:virt-handler', ['IP:127.0.0.1']),
    other,
  );
  strangerClient = mat(issue(dir, other, 'sclient', 'kubevirt.io:system:client:virt-handler'), other);
  wrongName = mat(issue(dir, ca, 'wrong', 'virt-api.kubevirt.svc', ['IP:127.0.0.1']), ca);
  launcher = createServer((s) => {
    launcherConnections++;
    s.on('data', (d) => s.write(d.toString().toUpperCase()));
  });
  await new Promise<void>((r) => launcher.listen(launcherSock, r));
});
afterAll(() => {
  launcher?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Writes `text` on a unix socket; resolves with what comes back before `ms`, or on close. */
function exchange(path: string, text: string, ms = 1500): Promise<{ reply: string; closed: boolean }> {
  return new Promise((resolve) => {
    const s: Socket = createConnection(path);
    let reply = '';
    const timer = setTimeout(() => {
      s.destroy();
      resolve({ reply, closed: false });
    }, ms);
    s.on('data', (d) => {
      reply += d.toString();
      if (reply.length >= text.length) {
        clearTimeout(timer);
        s.destroy();
        resolve({ reply, closed: false });
      }
    });
    s.on('close', () => {
      clearTimeout(timer);
      resolve({ reply, closed: true });
    });
    s.on('error', () => {});
    s.write(text);
  });
}

describe.each(carriers)('migration proxy, $name', ({ src, dst, skip }) => {
  if (skip) it.skip(`(skipped: ${skip})`, () => {});
  if (skip) return;
  it('carries a connection from the source unix socket to the target launcher over mutual TLS', async () => {
    const target = await startTargetProxy({
      tlsRelay: dst,
      host: '127.0.0.1',
      port: 0,
      unixTarget: launcherSock,
      tls: () => node,
    });
    const source = await startSourceProxy({
      tlsRelay: src,
      unixPath: join(dir, 'src', 'a-source.sock'),
      host: '127.0.0.1',
      port: target.port ?? 0,
      tls: () => client,
    });
    try {
      expect(statSync(source.unixPath ?? '').mode & 0o777).toBe(0o660);
      const { reply } = await exchange(source.unixPath ?? '', 'guest memory page');
      expect(reply).toBe('GUEST MEMORY PAGE');
      // A relay reports its counts every 100 ms.
      await vi.waitFor(() => expect(target.bytes).toEqual({ out: 17, in: 17 }));
      await vi.waitFor(() => expect(source.bytes).toEqual({ out: 17, in: 17 }));
      // While a connection is open, each side with a relay runs one for it (Node's TLS: none).
      const open = createConnection(source.unixPath ?? '');
      await new Promise<void>((r) => open.once('data', () => r()).write('x'));
      expect(tlsRelay.path ? runningRelays(tlsRelay.path) : 0).toBe((src ? 1 : 0) + (dst ? 1 : 0));
      open.destroy();
    } finally {
      await source.stop();
      await target.stop();
    }
  });

  it('passes the end of a stream on with its whole tail over TLS, while the other direction is backed up', async () => {
    const path = join(dir, 'tail.sock');
    const l = await backedUpLauncher(path);
    const target = await startTargetProxy({
      tlsRelay: dst,
      host: '127.0.0.1',
      port: 0,
      unixTarget: path,
      tls: () => node,
    });
    const source = await startSourceProxy({
      tlsRelay: src,
      unixPath: join(dir, 'tail-source.sock'),
      host: '127.0.0.1',
      port: target.port ?? 0,
      tls: () => client,
    });
    try {
      const sent = sendAndEnd(source.unixPath ?? '', 8 << 20);
      expect(await l.received).toBe(sent);
    } finally {
      await source.stop();
      await target.stop();
      l.server.close();
    }
  });

  /** The first bytes a source proxy sends on the migration port. */
  async function firstBytes(tls: boolean): Promise<Buffer> {
    let got = Buffer.alloc(0);
    let gotIt!: () => void;
    const arrived = new Promise<void>((r) => {
      gotIt = r;
    });
    const sniffer = createServer((s) =>
      s.on('data', (d: Buffer) => {
        got = Buffer.concat([got, d]);
        if (got.length >= 6) gotIt();
      }),
    );
    await new Promise<void>((r) => sniffer.listen(0, '127.0.0.1', r));
    const port = (sniffer.address() as { port: number }).port;
    const source = await startSourceProxy({
      tlsRelay: src,
      unixPath: join(dir, `sniff-${tls}.sock`),
      host: '127.0.0.1',
      port,
      tls: tls ? () => client : undefined,
    });
    const s = createConnection(source.unixPath ?? '');
    s.on('error', () => {});
    s.write('QEVM secret guest memory');
    await arrived;
    s.destroy();
    await source.stop();
    sniffer.close();
    return got;
  }

  it('sends a TLS ClientHello first on the migration port, never the plain stream', async () => {
    const b = await firstBytes(true);
    // TLS record: handshake (22), version 3.x, then a ClientHello (handshake type 1).
    expect(b[0]).toBe(0x16);
    expect(b[1]).toBe(0x03);
    expect(b[5]).toBe(0x01);
    expect(b.toString('latin1')).not.toContain('secret guest memory');
  });

  it('with disableTLS sends the stream as it is', async () => {
    const b = await firstBytes(false);
    expect(b.toString()).toContain('QEVM secret');
  });

  async function refusedPair(serverMat: MigrationTlsMaterial, clientMat: MigrationTlsMaterial) {
    const before = launcherConnections;
    const logs: string[] = [];
    const target = await startTargetProxy({
      tlsRelay: dst,
      host: '127.0.0.1',
      port: 0,
      unixTarget: launcherSock,
      tls: () => serverMat,
      log: (m) => logs.push(m),
    });
    const srcLogs: string[] = [];
    const source = await startSourceProxy({
      tlsRelay: src,
      unixPath: join(dir, 'refused.sock'),
      host: '127.0.0.1',
      port: target.port ?? 0,
      tls: () => clientMat,
      log: (m) => srcLogs.push(m),
    });
    const out = await exchange(source.unixPath ?? '', 'guest memory page');
    // The target's side of a failed handshake may end after the source's: its log, if any, first.
    for (let i = 0; i < 20 && logs.length === 0; i++) await new Promise((r) => setTimeout(r, 50));
    await source.stop();
    await target.stop();
    return { ...out, reached: launcherConnections - before, logs, srcLogs };
  }

  it('a receiving handler without a certificate from the cluster CA gets nothing', async () => {
    const r = await refusedPair(strangerNode, client);
    expect(r.reply).toBe('');
    expect(r.closed).toBe(true);
    expect(r.reached).toBe(0);
    expect(r.srcLogs.join('\n')).toMatch(/self.signed|unable to verify|certificate/i);
  });

  it("a receiver with the CA's certificate but not a handler's identity gets nothing", async () => {
    const r = await refusedPair(wrongName, client);
    expect(r.reply).toBe('');
    expect(r.reached).toBe(0);
    expect(r.srcLogs.join('\n')).toContain('is not kubevirt.io:system:node:virt-handler');
  });

  it("a sender without the CA's client certificate never reaches the target launcher", async () => {
    const r = await refusedPair(node, strangerClient);
    expect(r.reply).toBe('');
    expect(r.reached).toBe(0);
    expect(r.logs.join('\n')).toMatch(/TLS handshake|certificate/i);
  });
});

describe('migration proxy manager', () => {
  it("maps the target's listener ports to upstream's key ports and the source's sockets to them", async () => {
    const mk = () =>
      new MigrationProxyManager({
        bindHost: '127.0.0.1',
        serverTls: () => node,
        clientTls: () => client,
        disableTls: () => false,
      });
    const targetSide = mk();
    const sourceSide = mk();
    const uid = '1234-abcd';
    try {
      const ports = await targetSide.startTarget(uid, [
        { port: 0, unixPath: launcherSock },
        { port: LIBVIRT_DIRECT_MIGRATION_PORT, unixPath: launcherSock },
        { port: LIBVIRT_BLOCK_MIGRATION_PORT, unixPath: launcherSock },
      ]);
      expect(Object.values(ports).sort()).toEqual([0, 49152, 49153]);
      // Idempotent: the same sockets keep the same listeners.
      expect(
        await targetSide.startTarget(uid, [
          { port: 0, unixPath: launcherSock },
          { port: LIBVIRT_DIRECT_MIGRATION_PORT, unixPath: launcherSock },
          { port: LIBVIRT_BLOCK_MIGRATION_PORT, unixPath: launcherSock },
        ]),
      ).toEqual(ports);
      const files = await sourceSide.startSource(uid, '127.0.0.1', ports, join(dir, 'pod'));
      expect(files).toEqual({
        0: join(dir, 'pod', 'migrationproxy', `${uid}-source.sock`),
        49152: join(dir, 'pod', 'migrationproxy', `${uid}-49152-source.sock`),
        49153: join(dir, 'pod', 'migrationproxy', `${uid}-49153-source.sock`),
      });
      expect((await exchange(files[49152], 'ram')).reply).toBe('RAM');
      expect(sourceSide.bytes(uid)).toEqual({ out: 3, in: 3 });
      expect(sourceSide.openCount() + targetSide.openCount()).toBe(6);
    } finally {
      await sourceSide.shutdown();
      await targetSide.shutdown();
    }
    expect(sourceSide.openCount() + targetSide.openCount()).toBe(0);
    await expect(targetSide.startTarget('x', [])).rejects.toThrow(/shutting down/);
  });

  it("both sides follow the migration's own disableTLS while their views of the cluster's disagree", async () => {
    // The KubeVirt CR changed between the target's start and the source's: the target's
    // handler still reads TLS, the source's plain. The migration carries what the
    // controller copied at hand-over, and both use that.
    const logs: string[] = [];
    const mk = (clusterPlain: boolean) =>
      new MigrationProxyManager({
        bindHost: '127.0.0.1',
        serverTls: () => node,
        clientTls: () => client,
        disableTls: () => clusterPlain,
        log: (m) => logs.push(m),
      });
    for (const migrationPlain of [false, true]) {
      const ms = { migrationConfiguration: { disableTLS: migrationPlain } };
      const targetSide = mk(false);
      const sourceSide = mk(true);
      const uid = `disagree-${migrationPlain}`;
      try {
        const ports = await targetSide.startTarget(
          uid,
          [{ port: LIBVIRT_DIRECT_MIGRATION_PORT, unixPath: launcherSock }],
          migrationDisablesTls(ms),
        );
        const files = await sourceSide.startSource(
          uid,
          '127.0.0.1',
          ports,
          join(dir, uid),
          migrationDisablesTls(ms),
        );
        expect((await exchange(files[LIBVIRT_DIRECT_MIGRATION_PORT], 'page')).reply).toBe('PAGE');
      } finally {
        await sourceSide.shutdown();
        await targetSide.shutdown();
      }
      const carrier = migrationPlain ? 'plain TCP' : 'TLS';
      expect(logs.filter((l) => l.includes(uid)).map((l) => l.match(/closed \(([^;]+);/)?.[1])).toEqual([
        carrier,
        carrier,
      ]);
    }
    // Without a configuration (a controller that copied none) the cluster's view stands in.
    expect(migrationDisablesTls({})).toBeUndefined();
    expect(migrationDisablesTls({ migrationConfiguration: {} })).toBe(false);
  });
});
