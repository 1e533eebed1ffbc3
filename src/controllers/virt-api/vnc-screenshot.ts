/**
 * `GET virtualmachineinstances/{name}/vnc/screenshot[?moveCursor=true|false]`: the guest's
 * display as PNG (`image/png`), as upstream answers it. The picture comes from the
 * launcher (libvirt's screenshot, converted to PNG), through the VMI's virt-handler. With
 * `moveCursor=true` virt-api first moves the pointer over the VNC stream (a shared RFB
 * session, so a connected viewer stays), as upstream does to wake a screensaver.
 */
import { createWebSocketStream } from 'ws';
import { rfbHandshake } from '../common/rfb-client';
import type { ObjectClient } from '../runtime/types';
import type { HandlerClient } from './handler-client';
import { HttpError, RawResponse } from './http-error';
import { validateForStream } from './streams';
import { fetchVmi } from './vmi-subresources';

/** Serves the screenshot. */
export async function vncScreenshot(
  client: ObjectClient,
  handlers: HandlerClient,
  method: string,
  ns: string,
  name: string,
  query: URLSearchParams,
): Promise<RawResponse> {
  if (method !== 'GET') throw new HttpError(405, `${method} vnc/screenshot: use GET`);
  const move = query.get('moveCursor');
  if (move !== null && move !== 'true' && move !== 'false') {
    throw new HttpError(400, `moveCursor: ${JSON.stringify(move.slice(0, 32))} is not true or false`);
  }
  const vmi = await fetchVmi(client, ns, name);
  validateForStream(vmi, 'vnc');
  const node = vmi.status?.nodeName;
  if (move === 'true') {
    const ws = await handlers.stream(node, ns, name, 'vnc');
    const s = createWebSocketStream(ws);
    try {
      const rfb = await rfbHandshake(s);
      rfb.pointer(0, 0, 0);
      rfb.pointer(0, 1, 1);
      await new Promise<void>((r) => s.end(r));
    } catch (e) {
      throw new HttpError(500, `moving the cursor over VNC: ${(e as Error).message}`);
    } finally {
      s.destroy();
    }
  }
  const shot = await handlers.callRaw(node, 'GET', ns, name, 'vnc/screenshot');
  if (!shot.contentType.startsWith('image/png')) {
    throw new HttpError(502, `virt-handler: screenshot answered ${shot.contentType || 'no content type'}`);
  }
  return new RawResponse('image/png', shot.body);
}
