/**
 * The local subresource API: the part of upstream's virt-api that reaches a node
 * (`subresources.kubevirt.io/v1` pause, unpause, softreboot, reset, guestosinfo, userlist,
 * filesystemlist) served by
 * `kubevirt-ts up` on a unix socket (mode 0600), plus `console` and `vnc`, which answer
 * with the host path of the guest's unix socket instead of upgrading to a websocket (the
 * CLI runs on the same host). Paths follow upstream:
 * `PUT /apis/subresources.kubevirt.io/v1/namespaces/{ns}/virtualmachineinstances/{name}/pause`.
 * And `upload.cdi.kubevirt.io/v1beta1`'s UploadTokenRequests, which virt-api answers on a
 * cluster: tokens signed with local mode's signer key (local-pki.ts), which the local
 * upload proxy verifies. Whoever can open the socket (its owner) may upload, as they may
 * do anything else through it.
 */
import fs from 'node:fs';
import http from 'node:http';
import { join } from 'node:path';
import type { Duplex } from 'node:stream';
import type { VirtualMachineInstance } from '../../api/generated/types';
import { VmiResource } from '../../controllers/common/vmi-resource';
import { CONSOLE_SOCKET, podEmptyDirPath, VNC_SOCKET } from '../../controllers/launcher-protocol/paths';
import { shortDir } from '../../controllers/launcher-protocol/short-dir';
import { listenOwnerOnly } from '../../controllers/runtime/embedded/owner-socket';
import { PodType } from '../../controllers/runtime/resources';
import type { KubeObject } from '../../controllers/runtime/types';
import { HttpError as ApiHttpError, RawResponse } from '../../controllers/virt-api/http-error';
import { memoryDumpRequest } from '../../controllers/virt-api/memory-dump';
import { serveUploadApi, UPLOAD_GROUP } from '../../controllers/virt-api/upload-token-request';
import { onGuest } from '../../controllers/virt-handler/vmi-operations';
import type { LocalNode } from './local-node';
import { guestAddressFor, relayIntoNetns } from './pod-port-relay';

export interface LocalApiServer {
  close(): Promise<void>;
}

const ROUTE =
  /^\/apis\/subresources\.kubevirt\.io\/v1\/namespaces\/([a-z0-9-]{1,63})\/virtualmachineinstances\/([a-z0-9.-]{1,253})\/([a-z]+)$/;

/** The VM subresources local mode serves: memory dumps (virt-api's handler, ../../controllers/virt-api/memory-dump). */
const VM_ROUTE =
  /^\/apis\/subresources\.kubevirt\.io\/v1\/namespaces\/([a-z0-9-]{1,63})\/virtualmachines\/([a-z0-9.-]{1,253})\/(memorydump|removememorydump)$/;

const PORT_FORWARD =
  /^\/apis\/subresources\.kubevirt\.io\/v1\/namespaces\/([a-z0-9-]{1,63})\/virtualmachineinstances\/([a-z0-9.-]{1,253})\/portforward\/(\d{1,5})(?:\/(tcp))?$/;

/** The upgrade token of the local port-forward stream (raw TCP bytes after the 101). */
export const PORT_FORWARD_UPGRADE = 'kubevirt-ts-tcp';

/** An error with an HTTP status, sent as a Kubernetes Status. */
class HttpError extends Error {
  constructor(
    readonly code: number,
    message: string,
  ) {
    super(message);
  }
}

/** Serves the local subresource API of `node` on `socketPath`. */
export async function serveLocalApi(node: LocalNode, socketPath: string): Promise<LocalApiServer> {
  fs.rmSync(socketPath, { force: true });
  const server = http.createServer((req, res) => {
    handle(node, req)
      .then((body) => {
        if (body instanceof RawResponse) {
          res.writeHead(body.code, { 'content-type': body.contentType });
          res.end(body.body);
        } else send(res, 200, body ?? {});
      })
      .catch((e: unknown) => {
        const code = e instanceof HttpError || e instanceof ApiHttpError ? e.code : 500;
        send(res, code, {
          kind: 'Status',
          apiVersion: 'v1',
          status: 'Failure',
          code,
          message: e instanceof Error ? e.message : String(e),
        });
      });
  });
  server.on('upgrade', (req: http.IncomingMessage, socket: Duplex) => {
    portForward(node, req, socket).catch((e: unknown) => {
      const code = e instanceof HttpError ? e.code : 500;
      const msg = (e instanceof Error ? e.message : String(e)).replace(/[\r\n]/g, ' ');
      socket.end(
        `HTTP/1.1 ${code} Port Forward Failed\r\ncontent-type: text/plain\r\nconnection: close\r\n\r\n${msg}`,
      );
    });
  });
  await listenOwnerOnly(server, socketPath);
  return {
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((r) => server.close(() => r()));
      fs.rmSync(socketPath, { force: true });
    },
  };
}

function send(res: http.ServerResponse, code: number, body: unknown): void {
  res.writeHead(code, { 'content-type': 'application/json' });
  res.end(JSON.stringify(body));
}

async function handle(node: LocalNode, req: http.IncomingMessage): Promise<unknown> {
  const url = new URL(req.url ?? '/', 'http://local');
  if (url.pathname === '/version') return { component: 'kubevirt-ts up', node: node.nodeName };
  if (url.pathname === `/apis/${UPLOAD_GROUP}` || url.pathname.startsWith(`/apis/${UPLOAD_GROUP}/`))
    return uploadApi(node, req, url.pathname);
  const vmRoute = VM_ROUTE.exec(url.pathname);
  if (vmRoute) {
    if (req.method !== 'PUT') throw new HttpError(405, `${req.method} ${vmRoute[3]}: not supported`);
    const [, vmNs, vmName, op] = vmRoute as unknown as [
      string,
      string,
      string,
      'memorydump' | 'removememorydump',
    ];
    await memoryDumpRequest(node.store, node.config.current(), vmNs, vmName, op, await jsonBody(req));
    return {};
  }
  const m = ROUTE.exec(url.pathname);
  if (!m) throw new HttpError(404, `no such path ${JSON.stringify(url.pathname.slice(0, 200))}`);
  const [, ns, name, sub] = m as unknown as [string, string, string, string];
  const vmi = await node.store.get<VirtualMachineInstance & KubeObject>(VmiResource, name, ns).catch(() => {
    throw new HttpError(404, `VirtualMachineInstance ${ns}/${name} not found`);
  });
  if (vmi.status?.phase !== 'Running' && sub !== 'console' && sub !== 'vnc') {
    throw new HttpError(
      409,
      `VirtualMachineInstance ${ns}/${name} is not running (phase ${vmi.status?.phase ?? 'none'})`,
    );
  }
  const put = req.method === 'PUT';
  switch (sub) {
    case 'pause':
    case 'unpause':
    case 'softreboot':
    case 'reset':
      if (!put) break;
      await onGuest(node.handler, ns, name, sub);
      return {};
    case 'userlist':
    case 'filesystemlist': {
      const info = (await guestInfo(node, vmi)) as { userList?: unknown[]; fsInfo?: { disks?: unknown[] } };
      return { items: sub === 'userlist' ? (info.userList ?? []) : (info.fsInfo?.disks ?? []) };
    }
    case 'guestosinfo':
      return guestInfo(node, vmi);
    case 'console':
    case 'vnc': {
      const dir = podEmptyDirPath(node.o.paths.pods, await podUid(node, vmi), 'sockets');
      const path = join(shortDir(dir), sub === 'console' ? CONSOLE_SOCKET : VNC_SOCKET);
      if (!fs.existsSync(path))
        throw new HttpError(404, `VirtualMachineInstance ${ns}/${name} has no ${sub} socket`);
      return { socket: path };
    }
  }
  throw new HttpError(405, `${req.method} ${sub}: not supported`);
}

/** UploadTokenRequests, when local mode runs its upload proxy. */
async function uploadApi(node: LocalNode, req: http.IncomingMessage, path: string): Promise<unknown> {
  if (!node.upload)
    throw new HttpError(
      503,
      'uploads are not served: local mode runs no upload proxy without a pod network (--no-pod-network)',
    );
  return serveUploadApi(
    req.method ?? 'GET',
    { path, segments: path.split('/').filter(Boolean) },
    {
      authorizeCreate: async () => undefined,
      body: () => jsonBody(req),
      signerKeyFile: node.pki.files.signerKey,
    },
  );
}

/** The request's JSON body (at most 64 KiB: a token request is small). */
async function jsonBody(req: http.IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > 65_536) throw new HttpError(413, 'request body over 64 KiB');
    chunks.push(c as Buffer);
  }
  try {
    return JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
  } catch {
    throw new HttpError(400, 'the body is not JSON');
  }
}

async function guestInfo(node: LocalNode, vmi: VirtualMachineInstance): Promise<unknown> {
  const { client } = await node.handler.launcherOf(vmi.metadata?.namespace ?? '', vmi.metadata?.name ?? '');
  const info = await client.getGuestInfo();
  if (!info)
    throw new HttpError(
      409,
      `VirtualMachineInstance ${vmi.metadata?.name}: the guest agent is not connected`,
    );
  return info;
}

/** `portforward/{port}[/tcp]` upgraded to a raw stream relayed to the guest's port. */
async function portForward(node: LocalNode, req: http.IncomingMessage, socket: Duplex): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://local');
  const m = PORT_FORWARD.exec(url.pathname);
  if (!m || req.headers.upgrade !== PORT_FORWARD_UPGRADE)
    throw new HttpError(404, `no such upgrade path ${JSON.stringify(url.pathname.slice(0, 200))}`);
  const [, ns, name, portText] = m as unknown as [string, string, string, string];
  const port = Number(portText);
  if (port < 1 || port > 65535) throw new HttpError(400, `port ${port} is not 1-65535`);
  const subject = `VirtualMachineInstance ${ns}/${name}`;
  const vmi = await node.store.get<VirtualMachineInstance & KubeObject>(VmiResource, name, ns).catch(() => {
    throw new HttpError(404, `${subject} not found`);
  });
  if (vmi.status?.phase !== 'Running') throw new HttpError(409, `${subject} is not running`);
  const uid = await podUid(node, vmi);
  const netns = node.podNetns(uid);
  if (!netns) throw new HttpError(409, `${subject}: its launcher pod has no network namespace`);
  const host = await guestAddressFor(podEmptyDirPath(node.o.paths.pods, uid, 'sockets'), subject).catch(
    (e) => {
      throw new HttpError(409, (e as Error).message);
    },
  );
  socket.write(
    `HTTP/1.1 101 Switching Protocols\r\nupgrade: ${PORT_FORWARD_UPGRADE}\r\nconnection: Upgrade\r\n\r\n`,
  );
  await relayIntoNetns(netns, host, port, socket, (m) => node.o.log?.('port-forward', `${subject}: ${m}`));
}

async function podUid(node: LocalNode, vmi: VirtualMachineInstance): Promise<string> {
  const pods = await node.store.list<KubeObject & { spec?: { nodeName?: string } }>(PodType, {
    namespace: vmi.metadata?.namespace,
    labelSelector: `kubevirt.io/created-by=${vmi.metadata?.uid}`,
  });
  const pod = pods.items.find((p) => !p.metadata?.deletionTimestamp);
  if (!pod?.metadata?.uid)
    throw new HttpError(409, `VirtualMachineInstance ${vmi.metadata?.name}: no launcher pod`);
  return pod.metadata.uid;
}
