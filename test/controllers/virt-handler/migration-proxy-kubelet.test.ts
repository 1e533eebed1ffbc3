/**
 * The `virt-handler` command's migration proxy on a kubelet node
 * (cli/commands/virt-handler-migration.ts, migration-proxy/kubelet-wiring.ts): built
 * from the pod IP and the mounted certificate files, refusing missing pieces by flag;
 * the target's sockets in the target pod's volumes (its daemon, QEMU's streams in
 * `public/migrationproxy`, owned by QEMU's user); the source launcher given the in-pod
 * paths (`/var/run/kubevirt/migrationproxy/...`) of sockets the handler made on the host;
 * a connection from the source socket reaches the target pod's daemon over mutual TLS
 * read from the files, or plain TCP once `disableTLS` is set.
 */
import { mkdirSync, mkdtempSync, realpathSync, rmSync, statSync } from 'node:fs';
import { createConnection, createServer, type Server } from 'node:net';
import { tmpdir } from 'node:os';
import { basename, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrationProxyFromFlags } from '../../../src/cli/commands/virt-handler-migration';
import { proxiedOptions } from '../../../src/controllers/virt-handler/migration-proxy';
import { type CertFiles, issue, makeCa } from '../../support/tls-certs';

const dir = mkdtempSync(join(tmpdir(), 'kvts-mpk-'));
// The short links to long socket directories (short-dir.ts) go away with the test's dir.
process.env.KUBEVIRT_TS_SOCKET_LINKS = join(dir, 'l');
const podsRoot = join(dir, 'pods');
const targetPod = 'tpod-1';
const sourcePod = 'spod-1';
const vmiUid = 'vmi-uid-1';
const emptyDir = (pod: string, vol: string) => join(podsRoot, pod, 'volumes', 'kubernetes.io~empty-dir', vol);
const daemonSock = join(emptyDir(targetPod, 'libvirt-runtime'), 'run', 'libvirt', 'libvirt-sock');
let ca: CertFiles;
let node: CertFiles;
let client: CertFiles;
let daemon: Server;
/** First bytes each connection to the target daemon's socket brought. */
const seen: string[] = [];

beforeAll(async () => {
  ca = makeCa(dir, 'kubevirt-ca');
  node = issue(dir, ca, 'node', 'kubevirt.io:system:node:virt-handler', ['IP:127.0.0.1']);
  client = issue(dir, ca, 'client', 'kubevirt.io:system:client:virt-handler');
  mkdirSync(join(daemonSock, '..'), { recursive: true });
  mkdirSync(emptyDir(sourcePod, 'public'), { recursive: true });
  mkdirSync(emptyDir(targetPod, 'public'), { recursive: true });
  daemon = createServer((s) =>
    s.once('data', (d) => {
      seen.push(d.toString());
      s.end(`ok ${d}`);
    }),
  );
  await new Promise<void>((r) => daemon.listen(daemonSock, r));
});
afterAll(() => {
  daemon?.close();
  rmSync(dir, { recursive: true, force: true });
});

const flags = (over: Record<string, string | undefined> = {}) => ({
  podsRoot,
  podIpAddress: '127.0.0.1',
  tlsCertFile: node.cert,
  tlsKeyFile: node.key,
  migrationClientCertFile: client.cert,
  migrationClientKeyFile: client.key,
  kubevirtCa: ca.cert,
  ...over,
});

function ask(path: string, text: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = createConnection(path, () => s.write(text));
    let got = '';
    s.on('data', (d) => {
      got += d;
    });
    s.on('close', () => resolve(got));
    s.on('error', reject);
  });
}

describe('virt-handler migration proxy from its flags', () => {
  it('has none without --pod-ip-address', async () => {
    expect(await migrationProxyFromFlags({ podsRoot }, () => false)).toBeUndefined();
  });

  it.each([
    ['an empty pod IP', { podIpAddress: '' }, '--pod-ip-address: "" is not an IP address'],
    ['a host name', { podIpAddress: 'node-1' }, '--pod-ip-address: "node-1" is not an IP address'],
    [
      'no client key',
      { migrationClientKeyFile: undefined },
      '--pod-ip-address needs --migration-client-key-file (the migration proxy speaks mutual TLS)',
    ],
    [
      'no CA',
      { kubevirtCa: undefined },
      '--pod-ip-address needs --kubevirt-ca (the migration proxy speaks mutual TLS)',
    ],
    [
      'a missing serving certificate',
      { tlsCertFile: '/nonexistent/tls.crt' },
      '--tls-cert-file: "/nonexistent/tls.crt" does not exist',
    ],
  ])('refuses %s', async (_what, over, message) => {
    await expect(migrationProxyFromFlags(flags(over), () => false)).rejects.toThrow(message);
  });

  it('carries the source launcher from in-pod socket paths to the target pod over mutual TLS, or plain with disableTLS', async () => {
    let disableTls = false;
    // One wiring per node; both on loopback here.
    const logged: string[] = [];
    const target = await migrationProxyFromFlags(
      flags(),
      () => disableTls,
      (m) => logged.push(m),
    );
    const source = await migrationProxyFromFlags(flags(), () => disableTls);
    if (!target || !source) throw new Error('no proxy built');
    try {
      const sockets = target.targetSockets(targetPod, vmiUid, true);
      const mp = join(emptyDir(targetPod, 'public'), 'migrationproxy');
      // kubelet's paths are too long for unix sockets: reached through short links to the same files.
      expect(sockets.map((s) => [s.port, realpathSync(s.unixPath.replace(/\/[^/]+$/, ''))])).toEqual([
        [0, join(daemonSock, '..')],
        [49152, mp],
        [49153, mp],
      ]);
      expect(sockets.map((s) => basename(s.unixPath))).toEqual([
        'libvirt-sock',
        `${vmiUid}-49152-source.sock`,
        `${vmiUid}-49153-source.sock`,
      ]);
      for (const s of sockets) expect(s.unixPath.length).toBeLessThanOrEqual(107);
      // QEMU (107) listens there on the target.
      expect(statSync(mp).uid).toBe(107);
      expect(target.targetSockets(targetPod, vmiUid, false).map((s) => s.port)).toEqual([0, 49152]);

      const ports = await target.manager.startTarget(vmiUid, sockets);
      expect(Object.values(ports).sort()).toEqual([0, 49152, 49153]);
      const state = { targetNodeAddress: target.address, targetDirectMigrationNodePorts: ports };
      const options = await proxiedOptions(source, vmiUid, state, sourcePod, { Bandwidth: '0' });
      const inPod = '/var/run/kubevirt/migrationproxy';
      expect(options).toEqual({
        Bandwidth: '0',
        TargetURI: `qemu+unix:///session?socket=${inPod}/${vmiUid}-source.sock`,
        MigrateURI: `unix://${inPod}/${vmiUid}-49152-source.sock`,
        DisksURI: `unix://${inPod}/${vmiUid}-49153-source.sock`,
      });
      // The same sockets on the host, in the source pod's public volume, owned by QEMU's user.
      const hostSock = join(emptyDir(sourcePod, 'public'), 'migrationproxy', `${vmiUid}-source.sock`);
      expect(statSync(hostSock).uid).toBe(107);
      expect(statSync(hostSock).isSocket()).toBe(true);
      expect(await ask(hostSock, 'hello')).toBe('ok hello');

      // A handler's proxies started after the CR set disableTLS speak plain TCP: TLS on one
      // side only would fail, so the target is restarted too.
      await source.manager.stopSource(vmiUid);
      await target.manager.stopTarget(vmiUid);
      // First how plain connections will be copied (the relay where it is installed, else Node),
      // then what each listener carried, and how: the daemon's got 'hello' and answered 'ok hello'.
      expect(logged.shift()).toMatch(
        /^migration proxy: plain \(disableTLS\) connections copied by (\/|Node)/,
      );
      expect(logged).toEqual([
        `migration ${vmiUid}: target proxies closed (TLS; bytes by key port 0: 5 out, 8 in; 49152: 0 out, 0 in; 49153: 0 out, 0 in)`,
      ]);
      disableTls = true;
      const plainPorts = await target.manager.startTarget(vmiUid, sockets);
      const [listener] = Object.entries(plainPorts).find(([, p]) => p === 0) ?? [];
      const wire = await new Promise<string>((resolve, reject) => {
        const s = createConnection(Number(listener), '127.0.0.1', () => s.write('plain'));
        s.on('data', (d) => resolve(d.toString()));
        s.on('error', reject);
      });
      expect(wire).toBe('ok plain');
      expect(seen).toEqual(['hello', 'plain']);
    } finally {
      await source.manager.shutdown();
      await target.manager.shutdown();
    }
  });
});
