/**
 * Serves the CSI services on a unix socket with grpc-js. Each service is an object of
 * promise-returning methods named as the generated server interfaces name the RPCs; an
 * RPC the object lacks answers UNIMPLEMENTED (ControllerPublishVolume, the group
 * snapshot service, ...), a thrown CsiError its status code, anything else INTERNAL.
 */
import { chmod, mkdir, rm } from 'node:fs/promises';
import { dirname } from 'node:path';
import { type handleUnaryCall, Server, type ServiceDefinition, status } from '@grpc/grpc-js';
import { bindUnixSocket, unixSocketServer } from '../common/grpc-unix';
import { CsiError } from './errors';
import { ControllerService, IdentityService, NodeService } from './generated/csi/csi';

type Methods = object;

/** The services to serve; an absent one is not registered at all. */
export interface CsiServices {
  identity: Methods;
  controller?: Methods;
  node?: Methods;
}

/** A running CSI server. */
export interface CsiServer {
  socketPath: string;
  close(): Promise<void>;
}

/** One service's handlers: each RPC calls the method of the same name, or answers UNIMPLEMENTED. */
function handlers(
  definition: ServiceDefinition,
  impl: Methods,
  log: (m: string) => void,
  trace?: (m: string) => void,
) {
  const out: Record<string, handleUnaryCall<unknown, unknown>> = {};
  for (const [name, method] of Object.entries(definition)) {
    const fn = (impl as Record<string, unknown>)[name];
    out[name] = (call, callback) => {
      if (typeof fn !== 'function') {
        callback({ code: status.UNIMPLEMENTED, message: `${method.path} is not implemented` }, null);
        return;
      }
      Promise.resolve()
        .then(() => fn.call(impl, call.request))
        .then(
          (res) => {
            trace?.(`${method.path}: OK`);
            callback(null, res);
          },
          (err: unknown) => {
            const code = err instanceof CsiError ? err.code : status.INTERNAL;
            const message = err instanceof Error ? err.message : String(err);
            trace?.(`${method.path}: ${status[code]} ${message}`);
            if (code === status.INTERNAL) log(`${method.path}: ${message}`);
            callback({ code, message }, null);
          },
        );
    };
  }
  return out;
}

/** Serves `services` on `socketPath` (mode 0600; a stale socket file is replaced). */
export async function serveCsi(
  socketPath: string,
  services: CsiServices,
  log: (m: string) => void = () => {},
  /** Called with each RPC's method and outcome (debugging, tests). */
  trace?: (m: string) => void,
): Promise<CsiServer> {
  await mkdir(dirname(socketPath), { recursive: true });
  await rm(socketPath, { force: true });
  const server = new Server();
  server.addService(IdentityService, handlers(IdentityService, services.identity, log, trace));
  if (services.controller)
    server.addService(ControllerService, handlers(ControllerService, services.controller, log, trace));
  if (services.node) server.addService(NodeService, handlers(NodeService, services.node, log, trace));
  await bindUnixSocket(server, socketPath);
  await chmod(socketPath, 0o600);
  return unixSocketServer(server, socketPath);
}
