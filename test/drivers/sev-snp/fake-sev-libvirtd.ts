/**
 * A small fake libvirt daemon for the SEV attestation tests: it listens on a unix
 * socket and speaks libvirt's real RPC protocol, built from the client's own framing,
 * XDR and typed-parameter codecs. It answers the handshake (auth list, keepalive
 * feature, open, close), keepalive pings, domain lookup and XML, and the three SEV
 * calls, recording what it was sent. An SEV host's answers come from its constructor.
 */
import { createServer, type Server, type Socket } from 'node:net';
import {
  KEEPALIVE_PROC_PING,
  KEEPALIVE_PROC_PONG,
  KEEPALIVE_PROGRAM,
  MessageStatus,
  MessageType,
  REMOTE_PROGRAM,
  RemoteProc,
} from '../../../src/drivers/libvirt/protocol/constants';
import {
  decodeMessage,
  encodeMessage,
  FrameDecoder,
  type MessageHeader,
} from '../../../src/drivers/libvirt/protocol/packet';
import {
  type DomainRef,
  encodeError,
  readDomain,
  readString,
  readTypedParams,
  type TypedParam,
  writeDomain,
  writeString,
  writeTypedParams,
} from '../../../src/drivers/libvirt/protocol/types';
import { XdrReader, type XdrWriter } from '../../../src/drivers/libvirt/xdr';

/** What the fake host knows. */
export interface FakeSevHost {
  nodeSevInfo: TypedParam[];
  domains: Array<{ ref: DomainRef; xml: string; launchSecurityInfo: TypedParam[] }>;
}

/** A call the daemon received. */
export interface RecordedCall {
  procedure: number;
  domain?: string;
  params?: TypedParam[];
}

const VIR_ERR_NO_DOMAIN = 42;
const VIR_ERR_NO_SUPPORT = 3;
const VIR_FROM_REMOTE = 13;

export class FakeSevLibvirtd {
  readonly calls: RecordedCall[] = [];
  private readonly server: Server;
  private readonly sockets = new Set<Socket>();

  constructor(private readonly host: FakeSevHost) {
    this.server = createServer((s) => this.serve(s));
  }

  listen(path: string): Promise<void> {
    return new Promise((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(path, () => resolve());
    });
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy();
    await new Promise((r) => this.server.close(() => r(undefined)));
  }

  private serve(socket: Socket): void {
    this.sockets.add(socket);
    socket.on('close', () => this.sockets.delete(socket));
    const frames = new FrameDecoder();
    socket.on('data', (data) => {
      for (const frame of frames.push(data)) this.handle(socket, frame);
    });
  }

  private handle(socket: Socket, frame: Buffer): undefined {
    const { header, payload } = decodeMessage(frame);
    if (header.program === KEEPALIVE_PROGRAM) {
      if (header.procedure === KEEPALIVE_PROC_PING) {
        socket.write(
          encodeMessage({ ...header, procedure: KEEPALIVE_PROC_PONG, type: MessageType.MESSAGE, serial: 0 }),
        );
      }
      return;
    }
    if (header.program !== REMOTE_PROGRAM || header.type !== MessageType.CALL) return;
    const r = new XdrReader(payload, 0, payload.length, `call ${header.procedure}`);
    const reply = (body?: (w: XdrWriter) => void): undefined => {
      socket.write(encodeMessage({ ...header, type: MessageType.REPLY, status: MessageStatus.OK }, body));
    };
    const fail = (code: number, message: string): undefined => {
      socket.write(
        encodeMessage(
          { ...header, type: MessageType.REPLY, status: MessageStatus.ERROR } as MessageHeader,
          (w) => encodeError(w, { code, domain: VIR_FROM_REMOTE, message, level: 2 }),
        ),
      );
    };
    const findDomain = (ref: DomainRef) => this.host.domains.find((d) => d.ref.name === ref.name);
    switch (header.procedure) {
      case RemoteProc.AUTH_LIST:
        return reply((w) => w.array([0], 20, (ww, v) => ww.int(v)));
      case RemoteProc.CONNECT_SUPPORTS_FEATURE:
        return reply((w) => w.int(1));
      case RemoteProc.CONNECT_OPEN:
      case RemoteProc.CONNECT_CLOSE:
        return reply();
      case RemoteProc.DOMAIN_LOOKUP_BY_NAME: {
        const name = readString(r);
        const d = this.host.domains.find((x) => x.ref.name === name);
        this.calls.push({ procedure: header.procedure, domain: name });
        if (!d) return fail(VIR_ERR_NO_DOMAIN, `Domain not found: no domain with matching name '${name}'`);
        return reply((w) => writeDomain(w, d.ref));
      }
      case RemoteProc.DOMAIN_GET_XML_DESC: {
        const d = findDomain(readDomain(r));
        if (!d) return fail(VIR_ERR_NO_DOMAIN, 'Domain not found');
        return reply((w) => writeString(w, d.xml));
      }
      case RemoteProc.NODE_GET_SEV_INFO:
        this.calls.push({ procedure: header.procedure });
        if (this.host.nodeSevInfo.length === 0)
          return fail(VIR_ERR_NO_SUPPORT, 'QEMU does not support SEV guest');
        return reply((w) => {
          writeTypedParams(w, this.host.nodeSevInfo, 64);
          w.int(this.host.nodeSevInfo.length);
        });
      case RemoteProc.DOMAIN_GET_LAUNCH_SECURITY_INFO: {
        const d = findDomain(readDomain(r));
        this.calls.push({ procedure: header.procedure, domain: d?.ref.name });
        if (!d) return fail(VIR_ERR_NO_DOMAIN, 'Domain not found');
        return reply((w) => writeTypedParams(w, d.launchSecurityInfo, 64));
      }
      case RemoteProc.DOMAIN_SET_LAUNCH_SECURITY_STATE: {
        const dom = readDomain(r);
        const params = readTypedParams(r, 64);
        r.uint();
        this.calls.push({ procedure: header.procedure, domain: dom.name, params });
        return reply();
      }
      default:
        return fail(VIR_ERR_NO_SUPPORT, `fake libvirtd: procedure ${header.procedure} is not implemented`);
    }
  }
}
