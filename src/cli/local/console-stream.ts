/**
 * Streams a guest's serial console (a unix socket the launcher relays) to this terminal.
 * Interactive on a terminal: stdin goes raw to the guest and Ctrl-] ends the session, as
 * upstream `virtctl console`. Without a terminal on stdin it only copies input through.
 */
import { connect, type Socket } from 'node:net';
import type { Duplex } from 'node:stream';

/** The escape byte: Ctrl-]. */
export const ESCAPE = 0x1d;

/** Options of {@link attachConsole}. */
export interface AttachOptions {
  /** Send stdin to the guest (default true). */
  input?: boolean;
  out?: NodeJS.WritableStream;
  in?: NodeJS.ReadStream;
  /** Called once with each chunk of guest output too (e.g. to watch for a marker). */
  onOutput?: (chunk: Buffer) => void;
}

/** Connects to the console socket, retrying while it does not exist yet (up to `timeoutMs`). */
export async function connectConsole(path: string, timeoutMs = 30_000): Promise<Socket> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await new Promise<Socket>((resolve, reject) => {
        const s = connect(path);
        s.once('connect', () => resolve(s));
        s.once('error', reject);
      });
    } catch (e) {
      if (Date.now() > end) throw new Error(`console ${path}: ${(e as Error).message}`);
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

/**
 * Attaches the terminal to the console socket; resolves when the user escapes (Ctrl-]),
 * stdin ends, or the socket closes.
 */
export function attachConsole(sock: Duplex, o: AttachOptions = {}): Promise<'escape' | 'closed'> {
  const out = o.out ?? process.stdout;
  const stdin = o.in ?? process.stdin;
  const raw = Boolean(stdin.isTTY) && o.input !== false;
  return new Promise((resolve) => {
    let done = false;
    const finish = (why: 'escape' | 'closed') => {
      if (done) return;
      done = true;
      if (o.input !== false) {
        stdin.off('data', onInput);
        if (raw) stdin.setRawMode(false);
        stdin.pause();
      }
      sock.off('data', onData);
      resolve(why);
    };
    const onData = (chunk: Buffer) => {
      out.write(chunk);
      o.onOutput?.(chunk);
    };
    const onInput = (chunk: Buffer) => {
      const i = chunk.indexOf(ESCAPE);
      if (i >= 0) {
        if (i > 0) sock.write(chunk.subarray(0, i));
        finish('escape');
        return;
      }
      sock.write(chunk);
    };
    sock.on('data', onData);
    sock.once('close', () => finish('closed'));
    sock.once('error', () => finish('closed'));
    if (o.input !== false) {
      if (raw) stdin.setRawMode(true);
      stdin.on('data', onInput);
      stdin.once('end', () => finish('closed'));
      stdin.resume();
    }
  });
}
