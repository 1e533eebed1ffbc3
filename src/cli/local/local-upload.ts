/**
 * `virtctl image-upload` in local mode: CDI's upload proxy (controllers/cdi-uploadproxy)
 * served by `up` on a loopback port with local mode's certificates (local-pki.ts), and
 * the CDIConfig's `spec.uploadProxyURLOverride` set to it, so virtctl finds it through
 * `status.uploadProxyURL` as it does on a cluster. Tokens are signed by the local API
 * (local-api.ts, virt-api's role) with the key whose certificate the proxy verifies by.
 *
 * How the proxy reaches an upload pod: on a cluster through the pod's Service. Local mode
 * has no Services routed and the host has no route to its pod network (the bridge has no
 * address, by design: see pod-network.ts), so the proxy finds the pod by the claim's name
 * and opens each connection from inside the pod's network namespace to the pod IP's 8443
 * (the relay port-forward and the probes already use). That is the simplest correct way:
 * every upload pod keeps the server's fixed port in its own namespace, nothing is added to
 * the host's network, and the server's certificate (issued for the Service's DNS names) is
 * checked against that name as on a cluster. Without a pod network (`--no-pod-network`)
 * pods share the host's, where the fixed port would collide: uploads are refused there.
 */
import type { CDIConfig } from '../../api/generated/cdi/types';
import {
  ProxyError,
  startUploadProxy,
  type UploadProxy,
} from '../../controllers/cdi-uploadproxy/upload-proxy';
import { UPLOAD_SERVER_PORT, uploadResourceName } from '../../controllers/common/cdi-upload';
import { AlreadyExistsError, NotFoundError } from '../../controllers/runtime/errors';
import { CDIConfigType, PodType } from '../../controllers/runtime/resources';
import type { KubeObject, ObjectClient } from '../../controllers/runtime/types';
import type { LocalPkiFiles } from './local-pki';
import { dialInNetns } from './pod-port-relay';

/** CDI's one CDIConfig. */
const CONFIG_NAME = 'config';
/** An override `up` wrote (the proxy's port changes between starts): replaced at the next start. */
const OWN_OVERRIDE = /^https:\/\/127\.0\.0\.1:\d+$/;

/** What the local upload proxy needs of local mode. */
export interface LocalUploadOptions {
  client: ObjectClient;
  pki: LocalPkiFiles;
  /** The network namespace and IP of a running pod (the pod runtime's). */
  networkOf: (podUid: string) => { netns: string; ip: string } | undefined;
  /** Loopback port (default 0: any free port). */
  port?: number;
  log?: (line: string) => void;
}

/** The running proxy and the URL it is reached at. */
export interface LocalUpload {
  proxy: UploadProxy;
  url: string;
  close(): Promise<void>;
}

/** Where the upload server of `claim` is: its pod's namespace, reached by its IP from inside. */
export function podResolver(client: ObjectClient, networkOf: LocalUploadOptions['networkOf']) {
  return async (namespace: string, claim: string) => {
    const name = uploadResourceName(claim);
    const pod = await client.get<KubeObject>(PodType, name, namespace).catch((e: unknown) => {
      if (e instanceof NotFoundError)
        throw new ProxyError(503, `the upload pod ${namespace}/${name} does not exist yet`);
      throw e;
    });
    const net = pod.metadata?.uid ? networkOf(pod.metadata.uid) : undefined;
    if (!net) throw new ProxyError(503, `the upload pod ${namespace}/${name} has no network namespace yet`);
    return {
      host: net.ip,
      port: UPLOAD_SERVER_PORT,
      // The name its certificate carries (the Service's, as the cluster's proxy checks).
      servername: `${name}.${namespace}.svc`,
      connect: () => dialInNetns(net.netns, net.ip, UPLOAD_SERVER_PORT),
    };
  };
}

/**
 * Sets the CDIConfig's `spec.uploadProxyURLOverride` to `url`, making the CDIConfig when
 * missing; an override someone else set (not one of `up`'s loopback URLs) is kept.
 * Returns the override in force.
 */
export async function setUploadProxyOverride(client: ObjectClient, url: string): Promise<string> {
  for (let attempt = 0; ; attempt++) {
    const config = await client
      .get<CDIConfig & KubeObject>(CDIConfigType, CONFIG_NAME)
      .catch((e: unknown) => {
        if (e instanceof NotFoundError) return undefined;
        throw e;
      });
    if (!config) {
      try {
        await client.create(CDIConfigType, {
          apiVersion: 'cdi.kubevirt.io/v1beta1',
          kind: 'CDIConfig',
          metadata: { name: CONFIG_NAME },
          spec: { uploadProxyURLOverride: url },
        } as KubeObject);
        return url;
      } catch (e) {
        // The CDIConfig controller made it meanwhile: patch that one.
        if (!(e instanceof AlreadyExistsError) || attempt > 2) throw e;
        continue;
      }
    }
    const have = config.spec?.uploadProxyURLOverride;
    if (have !== undefined && have !== '' && !OWN_OVERRIDE.test(have)) return have;
    if (have !== url)
      await client.patch(
        CDIConfigType,
        CONFIG_NAME,
        { spec: { uploadProxyURLOverride: url } },
        { type: 'merge' },
      );
    return url;
  }
}

/** Starts the proxy on 127.0.0.1 and points the CDIConfig at it. */
export async function startLocalUpload(o: LocalUploadOptions): Promise<LocalUpload> {
  const proxy = await startUploadProxy({
    client: o.client,
    certFile: o.pki.proxyCert,
    keyFile: o.pki.proxyKey,
    signerCertFile: o.pki.signerCert,
    clientCertFile: o.pki.proxyClientCert,
    clientKeyFile: o.pki.proxyClientKey,
    caBundleFile: o.pki.caCert,
    host: '127.0.0.1',
    port: o.port ?? 0,
    resolve: podResolver(o.client, o.networkOf),
    log: o.log,
  });
  const url = `https://127.0.0.1:${proxy.port}`;
  const inForce = await setUploadProxyOverride(o.client, url);
  if (inForce !== url)
    o.log?.(
      `the CDIConfig's uploadProxyURLOverride ${inForce} is kept: virtctl needs --uploadproxy-url ${url}`,
    );
  return { proxy, url, close: () => proxy.close() };
}
