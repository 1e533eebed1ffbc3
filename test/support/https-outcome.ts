/**
 * One HTTPS request whose status and body a test asserts, optionally as a websocket
 * upgrade (virt-api's console/VNC subresources): an upgrade answered is reported with its
 * status and the socket closed, so authorization tests see what was allowed without
 * holding a stream open.
 */
import https from 'node:https';

/** What came back. */
export interface Outcome {
  status: number;
  body: string;
}

/** The headers of a websocket upgrade to the `plain.kubevirt.io` protocol (a fixed key). */
const UPGRADE_HEADERS = {
  connection: 'Upgrade',
  upgrade: 'websocket',
  'sec-websocket-version': '13',
  'sec-websocket-key': 'dGhlIHNhbXBsZSBub25jZQ==',
  'sec-websocket-protocol': 'plain.kubevirt.io',
};

/**
 * Sends `options` (a JSON content type added; `{}` as the body of a PUT) and resolves with
 * the outcome; `stream` asks for a websocket upgrade.
 */
export function httpsOutcome(options: https.RequestOptions, stream = false): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const req = https.request({
      ...options,
      headers: { ...options.headers, 'content-type': 'application/json', ...(stream ? UPGRADE_HEADERS : {}) },
    });
    req.on('upgrade', (res, socket) => {
      socket.destroy();
      resolve({ status: res.statusCode ?? 0, body: '' });
    });
    req.on('response', (res) => {
      let body = '';
      res.on('data', (c: Buffer) => {
        body += c.toString();
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('error', reject);
    req.end(options.method === 'PUT' ? '{}' : undefined);
  });
}
