/**
 * Streams between a websocket and a byte stream (a unix socket, a TCP connection, another
 * websocket), as upstream's console, VNC and port-forward subresources do: every chunk
 * travels as one binary message under the `plain.kubevirt.io` subprotocol, and closing
 * either end closes the other.
 */
import type { Duplex } from 'node:stream';
import type { WebSocket } from 'ws';

/** Upstream's websocket subprotocol for console, VNC and port-forward streams. */
export const PLAIN_STREAM_PROTOCOL = 'plain.kubevirt.io';

/** Pipes `ws` and `stream` both ways until either ends; resolves when both are closed. */
export function pipeWebSocket(ws: WebSocket, stream: Duplex): Promise<void> {
  return new Promise((resolve) => {
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      stream.destroy();
      if (ws.readyState === ws.OPEN || ws.readyState === ws.CONNECTING) ws.close();
      resolve();
    };
    ws.on('message', (data: Buffer | ArrayBuffer | Buffer[]) => {
      const buf = Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data as Buffer);
      if (!stream.write(buf)) ws.pause();
    });
    stream.on('drain', () => ws.resume());
    stream.on('data', (chunk: Buffer) => {
      if (ws.readyState !== ws.OPEN) return;
      ws.send(chunk, { binary: true });
      // Slow reader: hold the guest side until the websocket's buffer drains.
      if (ws.bufferedAmount > 1 << 20) {
        stream.pause();
        const check = setInterval(() => {
          if (ws.bufferedAmount < 1 << 18 || ws.readyState !== ws.OPEN) {
            clearInterval(check);
            stream.resume();
          }
        }, 20);
      }
    });
    ws.on('close', finish);
    ws.on('error', finish);
    stream.on('close', finish);
    stream.on('end', finish);
    stream.on('error', finish);
  });
}

/** Pipes two websockets (virt-api between the client and virt-handler). */
export function pipeWebSockets(a: WebSocket, b: WebSocket): Promise<void> {
  return new Promise((resolve) => {
    let done = false;
    const finish = () => {
      if (done) return;
      done = true;
      for (const s of [a, b]) if (s.readyState === s.OPEN || s.readyState === s.CONNECTING) s.close();
      resolve();
    };
    a.on('message', (d: Buffer) => b.readyState === b.OPEN && b.send(d, { binary: true }));
    b.on('message', (d: Buffer) => a.readyState === a.OPEN && a.send(d, { binary: true }));
    for (const s of [a, b]) {
      s.on('close', finish);
      s.on('error', finish);
    }
  });
}
