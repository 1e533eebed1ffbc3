/**
 * The lean kubeconfig reader: files (relative paths, inline data, contexts), KUBECONFIG
 * merged first-wins, token files re-read, the service account, and exec users handed to
 * client-node's KubeConfig (which runs the plugin).
 */
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import type https from 'node:https';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LeanKubeConfig } from '../../../../src/controllers/runtime/kube/kubeconfig';

const dir = mkdtempSync(join(tmpdir(), 'kvts-kc-'));
const b64 = (s: string) => Buffer.from(s).toString('base64');
const saved = { KUBECONFIG: process.env.KUBECONFIG, HOST: process.env.KUBERNETES_SERVICE_HOST };
afterEach(() => {
  for (const [k, v] of [
    ['KUBECONFIG', saved.KUBECONFIG],
    ['KUBERNETES_SERVICE_HOST', saved.HOST],
  ] as const) {
    if (v === undefined) delete process.env[k];
    else process.env[k] = v;
  }
});

function file(name: string, text: string): string {
  const p = join(dir, name);
  writeFileSync(p, text);
  return p;
}

async function applied(kc: LeanKubeConfig): Promise<https.RequestOptions> {
  const o: https.RequestOptions = {};
  await kc.applyToHTTPSOptions(o);
  return o;
}

describe('LeanKubeConfig', () => {
  it('reads a file: relative CA, inline client certificate, context namespace, server name', async () => {
    file('ca.pem', 'CA-PEM');
    const kc = new LeanKubeConfig();
    kc.loadFromFile(
      file(
        'a.yaml',
        `apiVersion: v1
kind: Config
current-context: admin
clusters:
- name: c1
  cluster: {server: "https://10.0.0.1:6443", certificate-authority: ca.pem, tls-server-name: kubernetes}
users:
- name: u1
  user: {client-certificate-data: ${b64('CERT')}, client-key-data: ${b64('KEY')}}
contexts:
- name: admin
  context: {cluster: c1, user: u1, namespace: vms}
`,
      ),
    );
    expect(kc.getCurrentCluster()?.server).toBe('https://10.0.0.1:6443');
    expect(kc.getContextObject(kc.getCurrentContext())?.namespace).toBe('vms');
    const o = await applied(kc);
    expect(String(o.ca)).toBe('CA-PEM');
    expect(String(o.cert)).toBe('CERT');
    expect(String(o.key)).toBe('KEY');
    expect(o.servername).toBe('kubernetes');
    expect(() => kc.setCurrentContext('nope')).toThrow('kubeconfig: no context "nope"');
  });

  it('merges KUBECONFIG first-wins and re-reads a token file', async () => {
    const token = file('token', 'first\n');
    const one = file(
      'one.yaml',
      `current-context: x
clusters: [{name: c, cluster: {server: "https://one", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {tokenFile: ${token}}}]
contexts: [{name: x, context: {cluster: c, user: u}}]
`,
    );
    const two = file(
      'two.yaml',
      `current-context: y
clusters: [{name: c, cluster: {server: "https://two"}}, {name: d, cluster: {server: "https://d"}}]
users: [{name: v, user: {username: bob, password: pw}}]
contexts: [{name: y, context: {cluster: d, user: v}}]
`,
    );
    process.env.KUBECONFIG = `${one}:${join(dir, 'missing.yaml')}:${two}`;
    const kc = new LeanKubeConfig();
    kc.loadFromDefault();
    expect(kc.getCurrentContext()).toBe('x');
    expect(kc.getCurrentCluster()?.server).toBe('https://one');
    let o = await applied(kc);
    expect(o.rejectUnauthorized).toBe(false);
    expect((o.headers as Record<string, string>).Authorization).toBe('Bearer first');
    writeFileSync(token, 'rotated');
    o = await applied(kc);
    expect((o.headers as Record<string, string>).Authorization).toBe('Bearer rotated');
    kc.setCurrentContext('y');
    expect(kc.getCurrentCluster()?.server).toBe('https://d');
    expect((await applied(kc)).auth).toBe('bob:pw');
  });

  it('reads the service account below a path prefix', async () => {
    const root = join(dir, 'pod');
    const sa = join(root, 'var/run/secrets/kubernetes.io/serviceaccount');
    mkdirSync(sa, { recursive: true });
    writeFileSync(join(sa, 'ca.crt'), 'SA-CA');
    writeFileSync(join(sa, 'token'), 'sa-token');
    writeFileSync(join(sa, 'namespace'), 'kubevirt\n');
    process.env.KUBERNETES_SERVICE_HOST = 'fd00::1';
    const kc = new LeanKubeConfig();
    kc.loadFromCluster(root);
    expect(kc.getCurrentCluster()?.server).toBe('https://[fd00::1]:443');
    expect(kc.getContextObject(kc.getCurrentContext())?.namespace).toBe('kubevirt');
    const o = await applied(kc);
    expect(String(o.ca)).toBe('SA-CA');
    expect((o.headers as Record<string, string>).Authorization).toBe('Bearer sa-token');
  });

  it('hands an exec user to client-node, which runs the plugin', async () => {
    const cred = JSON.stringify({
      apiVersion: 'client.authentication.k8s.io/v1',
      kind: 'ExecCredential',
      status: { token: 'from-exec' },
    });
    const kc = new LeanKubeConfig();
    kc.loadFromFile(
      file(
        'exec.yaml',
        `current-context: e
clusters: [{name: c, cluster: {server: "https://exec"}}]
users:
- name: u
  user:
    exec: {apiVersion: client.authentication.k8s.io/v1, command: /bin/sh, args: ["-c", ${JSON.stringify(`echo '${cred}'`)}], interactiveMode: Never}
contexts: [{name: e, context: {cluster: c, user: u}}]
`,
      ),
    );
    const o = await applied(kc);
    expect((o.headers as Record<string, string>).Authorization).toBe('Bearer from-exec');
  });
});
