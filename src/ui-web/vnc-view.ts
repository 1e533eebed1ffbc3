/** The guest's display with noVNC, over the server's vnc websocket. */
import RFB from '@novnc/novnc';
import { streamUrl } from './api';
import { h, mount } from './dom';

/** Opens VNC in `panel`; returns a function that closes it. */
export function openVnc(panel: HTMLElement, ns: string, name: string): () => void {
  const state = h('p', { class: 'stream-state', role: 'status' }, 'connecting…');
  const screen = h('div', { class: 'vnc', 'aria-label': `Display of ${name}` });
  mount(panel, state, screen);
  let rfb: RFB | undefined;
  let closed = false;
  let retry: ReturnType<typeof setTimeout> | undefined;
  const connect = () => {
    rfb = new RFB(screen, streamUrl(ns, name, 'vnc'), { wsProtocols: [] });
    rfb.scaleViewport = true;
    rfb.addEventListener('connect', () => {
      state.textContent = 'connected';
    });
    rfb.addEventListener('disconnect', () => {
      if (closed) return;
      state.textContent = 'disconnected: retrying';
      retry = setTimeout(connect, 1000);
    });
  };
  connect();
  return () => {
    closed = true;
    if (retry) clearTimeout(retry);
    rfb?.disconnect();
  };
}
