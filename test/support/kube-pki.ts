/**
 * The certificates and kubeconfigs of a test control plane ({@link ./kube}): a CA, the
 * serving and client certificates of each component, the aggregation layer's front proxy
 * and the service-account signing key, made with openssl in the plane's `pki/` directory.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** A new EC P-256 key, unencrypted: quick to make. */
const EC_KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

/** Names in certificate subjects come from tests: keep them to a safe alphabet. */
function checkSubjectName(what: string, value: string): void {
  if (!/^[A-Za-z0-9:._@-]{1,128}$/.test(value)) {
    throw new Error(`${what} ${JSON.stringify(value)}: use [A-Za-z0-9:._@-], 1-128 chars`);
  }
}

/** Issues a certificate signed by the CA in `pki`; EC P-256 keys are quick to make. */
export function issueCert(pki: string, name: string, cn: string, orgs: string[], ext: string): void {
  checkSubjectName('certificate common name', cn);
  for (const o of orgs) checkSubjectName('certificate organization', o);
  const subj = `${orgs.map((o) => `/O=${o}`).join('')}/CN=${cn}`;
  openssl(['req', '-new', ...EC_KEY, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', subj], pki);
  writeFileSync(join(pki, `${name}.ext`), ext);
  openssl(
    [
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      'ca.crt',
      '-CAkey',
      'ca.key',
      '-CAcreateserial',
      '-days',
      '3650',
      '-out',
      `${name}.crt`,
      '-extfile',
      `${name}.ext`,
    ],
    pki,
  );
}

/** Extensions of a client certificate. */
export const CLIENT_EXT = 'keyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n';
/** Common name of the front proxy's client certificate (the only allowed request-header name). */
export const FRONT_PROXY_CLIENT = 'front-proxy-client';

/** Writes a kubeconfig for the certificate `name` in `pki`, against `server`. */
export function writeKubeconfig(path: string, server: string, pki: string, name: string): void {
  // Paths are ours (a temp dir), so they are safe to place in YAML as quoted strings.
  const q = (s: string) => JSON.stringify(s);
  writeFileSync(
    path,
    `apiVersion: v1
kind: Config
clusters:
- name: kubevirt-ts-test
  cluster:
    server: ${q(server)}
    certificate-authority: ${q(join(pki, 'ca.crt'))}
users:
- name: ${q(name)}
  user:
    client-certificate: ${q(join(pki, `${name}.crt`))}
    client-key: ${q(join(pki, `${name}.key`))}
contexts:
- name: kubevirt-ts-test
  context:
    cluster: kubevirt-ts-test
    user: ${q(name)}
current-context: kubevirt-ts-test
`,
  );
}

/** A self-signed CA (`ca.crt`, `ca.key`) in `dir`. */
function makeCa(dir: string, cn: string): void {
  openssl(
    ['req', '-x509', ...EC_KEY, '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '3650', '-subj', `/CN=${cn}`],
    dir,
  );
}

/** The CA and the certificates every control plane needs (kubelet client one with `realNodes`). */
export function makePki(pki: string, realNodes: boolean): void {
  mkdirSync(pki, { recursive: true });
  makeCa(pki, 'kubevirt-ts-test-ca');
  issueCert(
    pki,
    'apiserver',
    'kube-apiserver',
    [],
    'keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\n' +
      'subjectAltName=IP:127.0.0.1,IP:10.0.0.1,IP:10.96.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,' +
      'DNS:kubernetes.default.svc,DNS:kubernetes.default.svc.cluster.local\n',
  );
  issueCert(pki, 'admin', 'kubevirt-ts-admin', ['system:masters'], CLIENT_EXT);
  issueCert(pki, 'controller-manager', 'system:kube-controller-manager', [], CLIENT_EXT);
  issueCert(pki, 'scheduler', 'system:kube-scheduler', [], CLIENT_EXT);
  // The apiserver's identity towards kubelets (logs, exec, port-forward).
  if (realNodes)
    issueCert(
      pki,
      'apiserver-kubelet-client',
      'kube-apiserver-kubelet-client',
      ['system:masters'],
      CLIENT_EXT,
    );
  // The aggregation layer's front proxy: its own CA (requestheader-client-ca) and the
  // client certificate kube-apiserver presents to aggregated API servers such as virt-api.
  const fp = join(pki, 'front-proxy');
  mkdirSync(fp, { recursive: true });
  makeCa(fp, 'kubevirt-ts-test-front-proxy-ca');
  issueCert(fp, 'front-proxy-client', FRONT_PROXY_CLIENT, [], CLIENT_EXT);
  // The service-account token signing key pair.
  openssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', 'sa.key'], pki);
  openssl(['ec', '-in', 'sa.key', '-pubout', '-out', 'sa.pub'], pki);
}
