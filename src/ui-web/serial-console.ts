/**
 * The guest's serial console in xterm.js, over the server's console websocket (bytes both
 * ways). Until the guest has a console (starting) the socket is refused: retry each second.
 */
import { Terminal } from '@xterm/xterm';
import { streamUrl } from './api';
import { h, mount } from './dom';

/** Opens the console in `panel`; returns a function that closes it. */
export function openConsole(panel: HTMLElement, ns: string, name: string): () => void {
  const state = h('p', { class: 'stream-state', role: 'status' }, 'connecting…');
  const box = h('div', { class: 'terminal', 'aria-label': `Serial console of ${name}` });
  mount(panel, state, box);
  const term = new Terminal({ convertEol: false, scrollback: 5000, fontSize: 14, screenReaderMode: false });
  term.open(box);
  // Tests and users read the whole buffer (beyond the visible rows) through this.
  (box as HTMLElement & { consoleText?: () => string }).consoleText = () => {
    const b = term.buffer.active;
    const lines: string[] = [];
    for (let i = 0; i < b.length; i++) lines.push(b.getLine(i)?.translateToString(true) ?? '');
    return lines.join('\n');
  };
  const enc = new TextEncoder();
  let ws: WebSocket | undefined;
  let closed = false;
  let retry: ReturnType<typeof setTimeout> | undefined;
  const connect = () => {
    const sock = new WebSocket(streamUrl(ns, name, 'console'));
    ws = sock;
    sock.binaryType = 'arraybuffer';
    sock.onopen = () => {
      state.textContent = 'connected';
      term.focus();
    };
    sock.onmessage = (m) => term.write(new Uint8Array(m.data as ArrayBuffer));
    sock.onclose = () => {
      if (closed) return;
      state.textContent = 'disconnected: retrying';
      retry = setTimeout(connect, 1000);
    };
  };
  const input = term.onData((d) => {
    if (ws?.readyState === WebSocket.OPEN) ws.send(enc.encode(d));
  });
  connect();
  return () => {
    closed = true;
    if (retry) clearTimeout(retry);
    input.dispose();
    ws?.close();
    term.dispose();
  };
}
