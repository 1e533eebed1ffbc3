/**
 * Authentication: this client speaks only unauthenticated unix-socket access (root on
 * libvirtd's socket). A daemon that lists SASL or polkit must make `connect` fail with a
 * clear `VIR_ERR_AUTH_FAILED` error naming the required types, before opening any URI.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { LibvirtClient, LibvirtError, VIR_ERR_AUTH_FAILED } from '../../../src/drivers/libvirt';
import { MessageStatus, MessageType, RemoteProc } from '../../../src/drivers/libvirt/protocol/constants';
import { decodeMessage, encodeMessage, FrameDecoder } from '../../../src/drivers/libvirt/protocol/packet';

const dir = mkdtempSync(path.join(os.tmpdir(), 'kvts-libvirt-auth-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A fake daemon answering AUTH_LIST with `types` and recording the procedures called. */
async function daemonRequiring(name: string, types: number[]) {
  const procs: number[] = [];
  const p = path.join(dir, name);
  const server = net.createServer((sock) => {
    const d = new FrameDecoder();
    sock.on('error', () => {});
    sock.on('data', (c) => {
      for (const f of d.push(c)) {
        const { header } = decodeMessage(f);
        procs.push(header.procedure);
        const reply = { ...header, type: MessageType.REPLY, status: MessageStatus.OK };
        if (header.procedure === RemoteProc.AUTH_LIST) {
          sock.write(encodeMessage(reply, (w) => w.array(types, 20, (ww, t) => ww.int(t))));
        } else if (header.procedure === RemoteProc.CONNECT_SUPPORTS_FEATURE) {
          sock.write(encodeMessage(reply, (w) => w.int(1)));
        } else {
          sock.write(encodeMessage(reply));
        }
      }
    });
  });
  await new Promise<void>((r) => server.listen(p, r));
  return { path: p, procs, close: () => server.close() };
}

describe('authentication', () => {
  it.each([
    ['sasl', [1]],
    ['polkit', [2]],
    ['sasl, polkit', [1, 2]],
  ])('refuses a daemon that requires %s', async (names, types) => {
    const srv = await daemonRequiring(`auth-${types.join('')}.sock`, types);
    const err = await LibvirtClient.connect({
      uri: 'test:///default',
      socketPath: srv.path,
      keepalive: false,
    }).catch((e) => e);
    expect(err).toBeInstanceOf(LibvirtError);
    expect(err.code).toBe(VIR_ERR_AUTH_FAILED);
    expect(err.message).toContain(`requires authentication (${names})`);
    expect(err.message).toContain(srv.path);
    // It stopped after AUTH_LIST: no URI was opened.
    expect(srv.procs).toEqual([RemoteProc.AUTH_LIST]);
    srv.close();
  });

  it('proceeds to open the URI when the daemon needs no authentication', async () => {
    const srv = await daemonRequiring('auth-none.sock', [0]);
    const c = await LibvirtClient.connect({ uri: 'test:///default', socketPath: srv.path, keepalive: false });
    expect(srv.procs).toEqual([
      RemoteProc.AUTH_LIST,
      RemoteProc.CONNECT_SUPPORTS_FEATURE,
      RemoteProc.CONNECT_OPEN,
    ]);
    await c.close();
    srv.close();
  });
});
