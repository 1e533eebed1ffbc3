/**
 * Throwaway certificates for TLS tests (openssl, EC P-256): a CA and certificates it
 * signs, for servers (with subject alternative names) or clients.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Files of a certificate. */
export interface CertFiles {
  cert: string;
  key: string;
}

function openssl(args: string[], cwd: string): void {
  execFileSync('openssl', args, { cwd, stdio: ['ignore', 'ignore', 'pipe'] });
}

const KEY = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

/** Makes a self-signed CA `name` in `dir`. */
export function makeCa(dir: string, name: string): CertFiles {
  mkdirSync(dir, { recursive: true });
  openssl(
    [
      'req',
      '-x509',
      ...KEY,
      '-keyout',
      `${name}.key`,
      '-out',
      `${name}.crt`,
      '-days',
      '30',
      '-subj',
      `/CN=${name}`,
    ],
    dir,
  );
  return { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
}

/** Issues `name` signed by `ca`: a server certificate when `sans` is given, else a client one. */
export function issue(dir: string, ca: CertFiles, name: string, cn: string, sans?: string[]): CertFiles {
  openssl(
    ['req', '-new', ...KEY, '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`],
    dir,
  );
  const ext = sans
    ? `keyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=serverAuth\nsubjectAltName=${sans.join(',')}\n`
    : 'keyUsage=critical,digitalSignature\nextendedKeyUsage=clientAuth\n';
  writeFileSync(join(dir, `${name}.ext`), ext);
  openssl(
    [
      'x509',
      '-req',
      '-in',
      `${name}.csr`,
      '-CA',
      ca.cert,
      '-CAkey',
      ca.key,
      '-CAcreateserial',
      '-days',
      '30',
      '-out',
      `${name}.crt`,
      '-extfile',
      `${name}.ext`,
    ],
    dir,
  );
  return { cert: join(dir, `${name}.crt`), key: join(dir, `${name}.key`) };
}
