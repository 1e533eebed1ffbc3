/**
 * Helpers of test/cluster/operator.serial.test.ts (and bench/operator-cluster.ts): kubectl
 * against a cluster, the dev-cluster operator manifest, the KubeVirt CR's conditions, the
 * addresses the API server's process is connected to, and the pods of the install.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { request } from 'node:https';
import { join } from 'node:path';
import { connect as tlsConnect } from 'node:tls';
import type { ClusterInfo } from '../../scripts/cluster/state';
import { repoRoot } from '../../scripts/gen-api';
import { manifestFiles } from '../../scripts/gen-manifests';
import { defaultInstallOptions } from '../../src/controllers/virt-operator/components/index';
import { PtySession } from '../cli/pty-bridge';
import { cacheDir } from '../support/integration';
import { waitFor } from '../support/wait';

export const kubectlBin = join(cacheDir, 'kube', 'current', 'bin', 'kubectl');

/** kubectl with the cluster's admin kubeconfig; throws with its stderr on failure. */
export function kubectl(info: ClusterInfo, ...args: string[]): string {
  return execFileSync(kubectlBin, ['--kubeconfig', info.kubeconfigPath, ...args], {
    encoding: 'utf8',
    stdio: ['pipe', 'pipe', 'pipe'],
  });
}

/** kubectl that is expected to fail: its exit status and stderr. */
export function kubectlResult(
  info: ClusterInfo,
  args: string[],
  input?: string,
): { code: number; err: string } {
  const r = spawnSync(kubectlBin, ['--kubeconfig', info.kubeconfigPath, ...args], {
    encoding: 'utf8',
    input,
  });
  return { code: r.status ?? -1, err: r.stderr };
}

/** kubectl get -o json, parsed. */
export function getJson<T = Record<string, unknown>>(info: ClusterInfo, ...args: string[]): T {
  return JSON.parse(kubectl(info, 'get', '-o', 'json', ...args)) as T;
}

/** The operator manifest rendered for this cluster (host network, its API server port and kubelet root). */
export function devOperatorManifest(info: ClusterInfo): string {
  const opts = defaultInstallOptions({
    devCluster: { apiServerPort: Number(new URL(info.server).port) },
    kubeletRootDir: join(info.stateDir, 'kubelet'),
  });
  const text = manifestFiles(opts).get('kubevirt-ts-operator.yaml');
  if (!text) throw new Error('gen-manifests rendered no kubevirt-ts-operator.yaml');
  return text;
}

export interface Condition {
  type: string;
  status: string;
  reason?: string;
  message?: string;
}

export interface KubeVirtCR {
  metadata: { generation?: number; finalizers?: string[]; deletionTimestamp?: string };
  spec: Record<string, unknown>;
  status?: {
    phase?: string;
    conditions?: Condition[];
    observedKubeVirtVersion?: string;
    targetKubeVirtVersion?: string;
    observedGeneration?: number;
  };
}

export const condition = (kv: KubeVirtCR | undefined, type: string): Condition | undefined =>
  kv?.status?.conditions?.find((c) => c.type === type);

export interface PodInfo {
  metadata: { name: string; uid: string; labels?: Record<string, string> };
  spec: { containers: Array<{ name: string; image: string }>; hostNetwork?: boolean };
  status: {
    phase?: string;
    podIP?: string;
    conditions?: Condition[];
    containerStatuses?: Array<{ name: string; restartCount: number; containerID?: string }>;
  };
}

/** The pods of namespace `ns`, by their `kubevirt.io` label. */
export function podsByComponent(info: ClusterInfo, ns: string): Map<string, PodInfo[]> {
  const pods = getJson<{ items: PodInfo[] }>(info, 'pods', '-n', ns).items;
  const out = new Map<string, PodInfo[]>();
  for (const p of pods) {
    const c = p.metadata.labels?.['kubevirt.io'] ?? '';
    out.set(c, [...(out.get(c) ?? []), p]);
  }
  return out;
}

export const isReady = (p: PodInfo): boolean =>
  p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;

/**
 * Remote addresses of the established TCP connections of the cluster's kube-apiserver
 * process (from `ss`): where it dials webhooks, the APIService, kubelets and etcd.
 */
export function apiserverPeers(info: ClusterInfo): string[] {
  const pid = Number(
    readFileSync(join(info.stateDir, 'control-plane', 'pids', 'kube-apiserver.pid'), 'utf8').trim(),
  );
  const out = execFileSync('ss', ['-tnpH', 'state', 'established'], { encoding: 'utf8' });
  const peers = new Set<string>();
  for (const line of out.split('\n')) {
    if (!line.includes(`pid=${pid},`)) continue;
    // Recv-Q Send-Q Local:Port Peer:Port users:((...))
    const cols = line.trim().split(/\s+/);
    const peer = cols[3] ?? '';
    peers.add(peer.replace(/:\d+$/, '').replace(/^\[|\]$/g, ''));
  }
  return [...peers].sort();
}

/** One request to the API server as its admin (kubectl hides a refusal's message behind its causes). */
export function apiRequest(
  info: ClusterInfo,
  method: string,
  path: string,
  body: unknown,
): Promise<{ code: number; body: { message?: string; details?: { causes?: unknown[] } } }> {
  const pki = join(info.stateDir, 'control-plane', 'pki');
  const url = new URL(path, info.server);
  return new Promise((resolve, reject) => {
    const req = request(
      url,
      {
        method,
        ca: readFileSync(join(pki, 'ca.crt')),
        cert: readFileSync(join(pki, 'admin.crt')),
        key: readFileSync(join(pki, 'admin.key')),
        headers: { 'content-type': 'application/json' },
      },
      (res) => {
        let text = '';
        res.on('data', (c: Buffer) => {
          text += c.toString('utf8');
        });
        res.on('end', () => resolve({ code: res.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    req.on('error', reject);
    req.end(JSON.stringify(body));
  });
}

/** SHA-256 fingerprint of the certificate in a Secret's `tls.crt`. */
export function secretCertFingerprint(info: ClusterInfo, ns: string, name: string): string {
  const s = getJson<{ data: Record<string, string> }>(info, 'secret', name, '-n', ns);
  return new X509Certificate(Buffer.from(s.data['tls.crt'] ?? '', 'base64')).fingerprint256;
}

/** A Secret's pair, for a client that presents it. */
export function secretPair(info: ClusterInfo, ns: string, name: string): { cert: Buffer; key: Buffer } {
  const s = getJson<{ data: Record<string, string> }>(info, 'secret', name, '-n', ns);
  return {
    cert: Buffer.from(s.data['tls.crt'] ?? '', 'base64'),
    key: Buffer.from(s.data['tls.key'] ?? '', 'base64'),
  };
}

/** SHA-256 fingerprint of the certificate a TLS server at host:port presents (optionally to a client pair). */
export function servedFingerprint(
  host: string,
  port: number,
  client?: { cert: Buffer; key: Buffer },
): Promise<string> {
  return new Promise((resolve, reject) => {
    const s = tlsConnect({ host, port, rejectUnauthorized: false, ...client }, () => {
      const fp = s.getPeerCertificate().fingerprint256;
      s.destroy();
      resolve(fp);
    });
    s.once('error', reject);
    s.setTimeout(5_000, () => s.destroy(new Error(`TLS to ${host}:${port} timed out`)));
  });
}

/**
 * `virtctl console VM --kubeconfig` in a pseudo-terminal (the cluster path: API server,
 * virt-api's websocket, virt-handler, the launcher): waits for `bootMarker` when given,
 * types `echo $((expr))tag`, and returns the number the guest's shell printed before the
 * tag; Ctrl-] must end virtctl with status 0.
 */
export async function consoleAnswers(
  info: ClusterInfo,
  vm: string,
  o: { expr: string; tag: string; bootMarker?: string },
): Promise<number> {
  const virtctl = join(repoRoot, 'dist', 'cli', 'virtctl.js');
  const pty = new PtySession([
    process.execPath,
    virtctl,
    'console',
    vm,
    '-n',
    'default',
    '--kubeconfig',
    info.kubeconfigPath,
  ]);
  try {
    await pty.waitFor('The escape sequence is ^]', 60_000);
    if (o.bootMarker) await pty.waitFor(o.bootMarker, 240_000);
    const from = pty.output.length;
    pty.type('\r');
    pty.type(`echo $((${o.expr}))${o.tag}\r`);
    // The answer, not the echoed command line (which shows the expression, not digits).
    const answer = new RegExp(`(?:^|\\n)(\\d+)${o.tag}`);
    await waitFor("the guest shell's answer", () => answer.test(pty.output.slice(from)), 60_000, 50);
    const n = Number(answer.exec(pty.output.slice(from))?.[1]);
    pty.type('\x1d');
    const code = await pty.exited;
    if (code !== 0) throw new Error(`virtctl console exited with ${code}`);
    return n;
  } finally {
    pty.kill();
  }
}

/** Server-side dry-run creates of `obj` (through virt-api's webhooks) every 250 ms until stopped; the HTTP codes. */
export function admissionProbe(
  info: ClusterInfo,
  obj: { metadata: { namespace: string } },
): { stop(): Promise<number[]> } {
  const codes: number[] = [];
  let stopped = false;
  const path = `/apis/kubevirt.io/v1/namespaces/${obj.metadata.namespace}/virtualmachineinstances?dryRun=All`;
  const loop = (async () => {
    while (!stopped) {
      codes.push((await apiRequest(info, 'POST', path, obj)).code);
      await new Promise((res) => setTimeout(res, 250));
    }
  })();
  return {
    stop: async () => {
      stopped = true;
      await loop;
      return codes;
    },
  };
}
