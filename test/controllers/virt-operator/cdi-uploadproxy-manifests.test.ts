/**
 * The upload path's install objects: cdi-uploadproxy (its Deployment with the signer's
 * certificate but not its key, its Service, read-only RBAC), virt-api's second APIService
 * for upload.cdi.kubevirt.io and its signer key, the certificate leaves the operator and
 * virt-certs make, and the user roles' right to create UploadTokenRequests.
 */
import { describe, expect, it } from 'vitest';
import { leafSpecs } from '../../../src/controllers/virt-operator/cert-rotation';
import { cdiUploadProxyObjects } from '../../../src/controllers/virt-operator/components/cdi-uploadproxy';
import { aggregatedRoleObjects } from '../../../src/controllers/virt-operator/components/cluster-roles';
import { defaultInstallOptions } from '../../../src/controllers/virt-operator/components/index';
import { virtApiComponents } from '../../../src/controllers/virt-operator/components/virt-api';

// biome-ignore lint/suspicious/noExplicitAny: rendered manifests are read as plain JSON
type Obj = any;

describe('upload install objects', () => {
  const o = defaultInstallOptions({ image: 'reg/kubevirt-ts:t', launcherImage: 'reg/virt-launcher:t' });

  it('cdi-uploadproxy: Deployment with its pairs, the signer certificate only, the CA bundle; Service 443; get-only RBAC', () => {
    const objs = cdiUploadProxyObjects(o) as Obj[];
    expect(objs.map((x) => `${x.kind}/${x.metadata.name}`)).toEqual([
      'ServiceAccount/cdi-uploadproxy',
      'ClusterRole/kubevirt-ts-cdi-uploadproxy',
      'ClusterRoleBinding/kubevirt-ts-cdi-uploadproxy',
      'Deployment/cdi-uploadproxy',
      'Service/cdi-uploadproxy',
    ]);
    const role = objs[1];
    expect(role.rules).toEqual([
      { apiGroups: [''], resources: ['persistentvolumeclaims', 'services'], verbs: ['get'] },
    ]);
    const pod = objs[3].spec.template.spec;
    const c = pod.containers[0];
    expect(c.image).toBe('reg/kubevirt-ts:t');
    expect(c.args).toContain('--signer-cert=/etc/cdi-uploadproxy/signer/tls.crt');
    expect(pod.volumes).toContainEqual({
      name: 'signer',
      secret: { secretName: 'kubevirt-ts-upload-token-signer', items: [{ key: 'tls.crt', path: 'tls.crt' }] },
    });
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    expect(c.readinessProbe.httpGet).toEqual({ scheme: 'HTTPS', port: 8443, path: '/healthz' });
    expect(objs[4].spec.ports).toEqual([
      { name: 'uploadproxy', port: 443, targetPort: 8443, protocol: 'TCP' },
    ]);
  });

  it('virt-api signs with the signer key and serves upload.cdi.kubevirt.io behind its own APIService', () => {
    const objs = virtApiComponents({ namespace: 'kubevirt', image: 'i', caBundle: 'PEM' }) as Obj[];
    const upload = objs.find(
      (x) => x.kind === 'APIService' && x.metadata.name === 'v1beta1.upload.cdi.kubevirt.io',
    );
    expect(upload.spec).toMatchObject({
      group: 'upload.cdi.kubevirt.io',
      version: 'v1beta1',
      service: { namespace: 'kubevirt', name: 'virt-api', port: 443 },
      caBundle: Buffer.from('PEM').toString('base64'),
    });
    const d = objs.find((x) => x.kind === 'Deployment');
    expect(d.spec.template.spec.containers[0].args).toContain(
      '--upload-token-signer-key=/etc/virt-api/upload-token-signer/tls.key',
    );
    expect(d.spec.template.spec.volumes).toContainEqual({
      name: 'upload-token-signer',
      secret: { secretName: 'kubevirt-ts-upload-token-signer', optional: false },
    });
  });

  it('the certificate plan has the proxy, client and signer leaves; edit and admin may ask for upload tokens', () => {
    const leaves = leafSpecs('kubevirt');
    expect(leaves['cdi-uploadproxy-server-cert']?.dnsNames).toContain('cdi-uploadproxy.kubevirt.svc');
    expect(leaves['cdi-uploadserver-client-cert']).toEqual({
      commonName: 'client.upload-server.cdi.kubevirt.io',
      usage: 'client',
    });
    expect(leaves['kubevirt-ts-upload-token-signer']?.usage).toBe('client');
    const rule = {
      apiGroups: ['upload.cdi.kubevirt.io'],
      resources: ['uploadtokenrequests'],
      verbs: ['create'],
    };
    const roles = aggregatedRoleObjects() as Obj[];
    expect(roles.map((r) => r.rules.some((x: Obj) => JSON.stringify(x) === JSON.stringify(rule)))).toEqual([
      true,
      true,
      false,
    ]);
  });
});
