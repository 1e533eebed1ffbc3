/**
 * The streaming VMI subresources: `console` and `vnc` (websockets relayed to the
 * virt-handler of the VMI's node, which streams the guest's unix socket) and
 * `portforward/{port}[/{protocol}]` (a websocket to a TCP port of the guest's first
 * interface address, dialed by virt-api). All speak upstream's `plain.kubevirt.io`:
 * binary messages carrying the raw bytes.
 */
import type { IncomingMessage } from 'node:http';
import { connect } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer } from 'ws';
import { PLAIN_STREAM_PROTOCOL, pipeWebSocket, pipeWebSockets } from '../common/ws-stream';
import type { ObjectClient } from '../runtime/types';
import type { HandlerClient } from './handler-client';
import { conflict, HttpError, statusBody } from './http-error';
import { fetchVmi, fetchVmiForVm, type Vmi } from './vmi-subresources';

const PORT_FORWARD = /^portforward\/(\d{1,5})(?:\/(tcp|udp))?$/;

/** Whether `op` is a stream this server serves. */
export function isStream(op: string): boolean {
  return op === 'console' || op === 'vnc' || PORT_FORWARD.test(op);
}

/**
 * Upstream's checks before a console or VNC connection: the device is there and the VMI
 * runs, else 400 (upstream's virtctl console retries on 400 while a VMI starts).
 */
export function validateForStream(vmi: Vmi, op: string): void {
  const devices = vmi.spec?.domain?.devices;
  if (op === 'console' && devices?.autoattachSerialConsole === false)
    throw new HttpError(400, 'No serial consoles are present.');
  if (op === 'vnc' && devices?.autoattachGraphicsDevice === false)
    throw new HttpError(400, 'No graphics devices are present.');
  if (vmi.status?.phase !== 'Running') throw new HttpError(400, `VMI ${vmi.metadata?.name} is not running`);
}

/** Answers an upgrade that cannot be served with a Status body. */
export function refuseUpgrade(socket: Duplex, e: unknown): void {
  const code = e instanceof HttpError ? e.code : 500;
  const details = e instanceof HttpError ? e.details : undefined;
  const body = JSON.stringify(statusBody(code, e instanceof Error ? e.message : String(e), details));
  socket.end(
    `HTTP/1.1 ${code} Error\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}

/** Serves stream upgrades. */
export class StreamRelay {
  private readonly wss = new WebSocketServer({
    noServer: true,
    handleProtocols: (p) => (p.has(PLAIN_STREAM_PROTOCOL) ? PLAIN_STREAM_PROTOCOL : false),
  });

  constructor(
    private readonly client: ObjectClient,
    private readonly handlers: HandlerClient,
  ) {}

  /** Opens the server side first, so a failure is still an HTTP answer; then upgrades. */
  async handle(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    ns: string,
    name: string,
    op: string,
  ): Promise<void> {
    await this.serve(req, socket, head, await fetchVmi(this.client, ns, name), op);
  }

  /**
   * Serves `virtualmachines/NAME/portforward/PORT[/PROTOCOL]` on the VM's VMI, as upstream's
   * virt-api does for `virtctl port-forward vm/NAME` (and ssh/scp to vm/NAME).
   */
  async handleVm(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    ns: string,
    name: string,
    op: string,
  ): Promise<void> {
    if (!PORT_FORWARD.test(op)) throw new HttpError(404, `no stream virtualmachines/${op}`);
    await this.serve(req, socket, head, await fetchVmiForVm(this.client, ns, name), op);
  }

  private async serve(
    req: IncomingMessage,
    socket: Duplex,
    head: Buffer,
    vmi: Vmi,
    op: string,
  ): Promise<void> {
    const protocols = String(req.headers['sec-websocket-protocol'] ?? '')
      .split(',')
      .map((s) => s.trim());
    if (!protocols.includes(PLAIN_STREAM_PROTOCOL)) {
      throw new HttpError(400, `websocket subprotocol ${PLAIN_STREAM_PROTOCOL} is required`);
    }
    const ns = vmi.metadata?.namespace ?? '';
    const name = vmi.metadata?.name ?? '';
    validateForStream(vmi, op.startsWith('portforward') ? 'portforward' : op);
    const pf = PORT_FORWARD.exec(op);
    if (pf) {
      const port = Number(pf[1]);
      if (port < 1 || port > 65535) throw new HttpError(400, `port ${pf[1]} out of range`);
      if (pf[2] === 'udp') throw new HttpError(400, 'portforward: only tcp is supported');
      // Upstream's validateVMIForPortForward.
      if ((vmi.status?.conditions ?? []).some((c) => c.type === 'Paused' && c.status === 'True'))
        throw conflict('virtualmachineinstance', name, 'VMI is paused');
      const ip = vmi.status?.interfaces?.find((i) => i.ipAddress)?.ipAddress;
      if (!ip) throw new HttpError(400, `VMI ${name} has no interface with an IP address`);
      const tcp = connect({ host: ip, port });
      await new Promise<void>((resolve, reject) => {
        tcp.once('connect', resolve);
        tcp.once('error', (e) => reject(new HttpError(502, `dialing VM ${ip}:${port}: ${e.message}`)));
      });
      this.wss.handleUpgrade(req, socket, head, (ws) => void pipeWebSocket(ws, tcp));
      return;
    }
    const upstream = await this.handlers.stream(vmi.status?.nodeName, ns, name, op);
    this.wss.handleUpgrade(req, socket, head, (ws) => void pipeWebSockets(ws, upstream));
  }

  close(): void {
    for (const c of this.wss.clients) c.terminate();
  }
}
