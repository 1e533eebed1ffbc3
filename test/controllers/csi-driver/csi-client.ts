/** A promise-returning CSI client over the driver's unix socket, for the tests. */
import { credentials, type handleUnaryCall, type ServiceError } from '@grpc/grpc-js';
import {
  ControllerClient,
  type ControllerServer,
  IdentityClient,
  type IdentityServer,
  NodeClient,
  type NodeServer,
} from '../../../src/controllers/csi-driver/generated/csi/csi';

type Callback<R> = (e: ServiceError | null, r: R) => void;
/** A generated server interface's RPCs as promise-returning calls (the clients' overloads defeat inference). */
type Promisified<S> = {
  [K in keyof S]: S[K] extends handleUnaryCall<infer Q, infer R> ? (req: Q) => Promise<R> : never;
};

function promisify<S>(client: object): Promisified<S> {
  return new Proxy(client, {
    get(target, prop) {
      const fn = (target as Record<string | symbol, unknown>)[prop];
      if (typeof fn !== 'function') return fn;
      return (req: unknown) =>
        new Promise((resolve, reject) =>
          (fn as (r: unknown, cb: Callback<unknown>) => void).call(target, req, (e, r) =>
            e ? reject(e) : resolve(r),
          ),
        );
    },
  }) as unknown as Promisified<S>;
}

/** The three services' clients on `socket`. */
export function csiClients(socket: string) {
  const addr = `unix:${socket}`;
  const raw = {
    identity: new IdentityClient(addr, credentials.createInsecure()),
    controller: new ControllerClient(addr, credentials.createInsecure()),
    node: new NodeClient(addr, credentials.createInsecure()),
  };
  return {
    identity: promisify<IdentityServer>(raw.identity),
    controller: promisify<ControllerServer>(raw.controller),
    node: promisify<NodeServer>(raw.node),
    close() {
      for (const c of Object.values(raw)) c.close();
    },
  };
}
