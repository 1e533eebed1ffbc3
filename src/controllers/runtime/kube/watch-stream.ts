/**
 * Following a watch's response stream: one JSON event per line, an ERROR event ending the
 * watch with its Status, a watchdog for a server that went away without a FIN.
 */
import type { IncomingMessage } from 'node:http';
import { errorFromStatus, type Status } from '../errors';
import type { KubeObject, WatchEvent, WatchHandle } from '../types';

/** What {@link followWatch} needs besides the stream. */
export interface FollowWatchOptions {
  /** `watch <plural>`, for errors. */
  what: string;
  /** The server, for errors. */
  from: string;
  /** The watch's timeoutSeconds (the server ends it then). */
  timeoutSeconds?: number;
  /** Called per event; a throw ends the watch with that error. */
  onEvent: (event: WatchEvent<KubeObject>) => void;
}

/** Reads `res` (a 200 watch response) until it ends, fails or is stopped; `abort` drops the request. */
export function followWatch(res: IncomingMessage, abort: () => void, o: FollowWatchOptions): WatchHandle {
  let resolveClosed!: (e: Error | undefined) => void;
  const closed = new Promise<Error | undefined>((r) => {
    resolveClosed = r;
  });
  let done = false;
  // A server ends a watch at timeoutSeconds; one that neither ends nor talks a minute
  // later is gone without a FIN (network cut, frozen process): give up on the stream.
  const watchdog = setTimeout(
    () => finish(new Error(`${o.what} on ${o.from}: stalled past its timeout`)),
    ((o.timeoutSeconds ?? 1800) + 60) * 1000,
  );
  watchdog.unref();
  const finish = (err?: Error) => {
    if (done) return;
    done = true;
    clearTimeout(watchdog);
    abort();
    resolveClosed(err);
  };
  let buf = '';
  res.setEncoding('utf8');
  res.on('data', (chunk: string) => {
    if (done) return;
    buf += chunk;
    let nl = buf.indexOf('\n');
    while (nl >= 0 && !done) {
      const line = buf.slice(0, nl).trim();
      buf = buf.slice(nl + 1);
      nl = buf.indexOf('\n');
      if (!line) continue;
      let ev: { type: string; object: KubeObject };
      try {
        ev = JSON.parse(line);
      } catch {
        finish(new Error(`${o.what}: malformed event from ${o.from}`));
        return;
      }
      if (ev.type === 'ERROR') {
        finish(errorFromStatus(ev.object as Status));
        return;
      }
      try {
        o.onEvent(ev as WatchEvent<KubeObject>);
      } catch (err) {
        finish(err as Error);
      }
    }
  });
  res.on('end', () => finish());
  res.on('error', (err) => finish(err));
  res.on('close', () => finish());
  return { stop: () => finish(), closed };
}
