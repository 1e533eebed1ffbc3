/**
 * Local mode's PKI (src/cli/local/local-pki.ts): the CA is made once and kept across
 * starts (and replaced when near its end), the leaves are signed by it, the proxy's
 * serving pair is good for `https://127.0.0.1` (a real TLS handshake checks the IP SAN),
 * the signer's key signs tokens its certificate verifies, keys are 0600, and the upload
 * pods' issuer gives server pairs for the Service's names.
 */
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { createServer, get } from 'node:https';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { ensureLocalPki, localPkiFiles } from '../../../src/cli/local/local-pki';
import { signUploadToken, verifyUploadToken } from '../../../src/controllers/common/upload-token';
import { certInfo, createCA, signedBy } from '../../../src/controllers/virt-operator/certificates';

const dirs: string[] = [];
const tmp = () => {
  const d = mkdtempSync(join(tmpdir(), 'kvts-pki-'));
  dirs.push(d);
  return join(d, 'pki');
};
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

/** A GET over TLS to 127.0.0.1 trusting only `ca`: the status, or the TLS error's code. */
function fetchStatus(port: number, ca: string): Promise<number | string> {
  return new Promise((resolve) => {
    const req = get({ host: '127.0.0.1', port, path: '/', ca }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', (e: NodeJS.ErrnoException) => resolve(e.code ?? e.message));
  });
}

describe('local PKI', () => {
  it('keeps its CA across starts and signs every leaf with it', { timeout: 30_000 }, async () => {
    const dir = tmp();
    const a = await ensureLocalPki(dir);
    const f = localPkiFiles(dir);
    const caPem = readFileSync(f.caCert, 'utf8');
    expect(a.ca.cert).toBe(caPem);
    for (const cert of [f.proxyCert, f.proxyClientCert, f.signerCert])
      expect(await signedBy(readFileSync(cert, 'utf8'), caPem)).toBe(true);
    for (const key of [f.caKey, f.proxyKey, f.proxyClientKey, f.signerKey])
      expect(statSync(key).mode & 0o777).toBe(0o600);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(certInfo(readFileSync(f.proxyClientCert, 'utf8')).subject).toBe(
      'CN=client.upload-server.cdi.kubevirt.io',
    );
    const proxyBefore = readFileSync(f.proxyCert, 'utf8');

    const b = await ensureLocalPki(dir);
    expect(b.ca.cert).toBe(caPem);
    // The leaves are issued again at each start.
    expect(readFileSync(f.proxyCert, 'utf8')).not.toBe(proxyBefore);

    // Upload pods' serving pairs: the Service's names, from the same CA, a day long.
    const names = [
      'cdi-upload-d',
      'cdi-upload-d.ns',
      'cdi-upload-d.ns.svc',
      'cdi-upload-d.ns.svc.cluster.local',
    ];
    const pair = await b.uploadCerts.issue('cdi-upload-d.ns.svc', names);
    expect(await signedBy(pair.cert, await b.uploadCerts.caBundle())).toBe(true);
    const info = certInfo(pair.cert);
    expect(info.dnsNames).toEqual(names);
    expect(info.notAfter.getTime() - Date.now()).toBeGreaterThan(23 * 3_600_000);
    expect(info.notAfter.getTime() - Date.now()).toBeLessThanOrEqual(86_400_000);
    expect(b.uploadCerts.renewBeforeMs).toBe(86_400_000 / 5);
  });

  it('replaces a CA that is near its end', { timeout: 30_000 }, async () => {
    const dir = tmp();
    await ensureLocalPki(dir);
    const f = localPkiFiles(dir);
    const old = await createCA('old', new Date(), 30 * 86_400_000);
    writeFileSync(f.caCert, old.cert);
    writeFileSync(f.caKey, old.key);
    const p = await ensureLocalPki(dir);
    expect(p.ca.cert).not.toBe(old.cert);
    expect(certInfo(p.ca.cert).subject).toBe('CN=kubevirt-ts-local-ca');
    expect(await signedBy(readFileSync(f.proxyCert, 'utf8'), p.ca.cert)).toBe(true);
  });

  it('the proxy pair serves https://127.0.0.1 to a client trusting the CA; another CA is refused', {
    timeout: 30_000,
  }, async () => {
    const dir = tmp();
    const p = await ensureLocalPki(dir);
    const f = p.files;
    const server = createServer({ cert: readFileSync(f.proxyCert), key: readFileSync(f.proxyKey) }, (_q, r) =>
      r.writeHead(204).end(),
    );
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    try {
      const port = (server.address() as AddressInfo).port;
      expect(await fetchStatus(port, p.ca.cert)).toBe(204);
      const other = await createCA('other', new Date(), 86_400_000);
      expect(await fetchStatus(port, other.cert)).toBe('UNABLE_TO_VERIFY_LEAF_SIGNATURE');
    } finally {
      server.close();
    }
    // The signer's key signs what its certificate verifies.
    const token = signUploadToken(readFileSync(f.signerKey, 'utf8'), 'default', 'disk');
    expect(verifyUploadToken(token, readFileSync(f.signerCert, 'utf8')).name).toBe('disk');
  });
});
