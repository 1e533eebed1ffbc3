/**
 * virt-exportproxy's install objects (upstream's NewExportProxyDeployment, its Service and
 * rbac/exportproxy.go): account, read-only RBAC on exports and Services, a Deployment of
 * `kubevirt-ts virt-exportproxy` with its serving pair and the CA bundle, the Service 443;
 * in the install (and so in manifests/ and the operator's objects); its certificate leaf.
 */
// biome-ignore-all lint/suspicious/noExplicitAny: rendered manifests are read as plain JSON
import { describe, expect, it } from 'vitest';
import { crdsDir } from '../../../scripts/gen-crds';
import { leafSpecs } from '../../../src/controllers/virt-operator/cert-rotation';
import {
  defaultInstallOptions,
  renderInstall,
} from '../../../src/controllers/virt-operator/components/index';
import { virtExportProxyObjects } from '../../../src/controllers/virt-operator/components/virt-exportproxy';

describe('virt-exportproxy install objects', () => {
  const o = defaultInstallOptions({ image: 'reg/kubevirt-ts:t', launcherImage: 'reg/virt-launcher:t' });

  it('account, get-only RBAC, a Deployment with its pair and the CA bundle, the Service 443 -> 8443', () => {
    const objs = virtExportProxyObjects(o) as any[];
    expect(objs.map((x) => `${x.kind}/${x.metadata.name}`)).toEqual([
      'ServiceAccount/kubevirt-exportproxy',
      'ClusterRole/kubevirt-ts-kubevirt-exportproxy',
      'ClusterRoleBinding/kubevirt-ts-kubevirt-exportproxy',
      'Deployment/virt-exportproxy',
      'Service/virt-exportproxy',
    ]);
    expect(objs[1].rules).toEqual([
      { apiGroups: ['export.kubevirt.io'], resources: ['virtualmachineexports'], verbs: ['get'] },
      { apiGroups: [''], resources: ['services'], verbs: ['get'] },
    ]);
    const pod = objs[3].spec.template.spec;
    const c = pod.containers[0];
    expect(pod.serviceAccountName).toBe('kubevirt-exportproxy');
    expect(pod.securityContext.runAsNonRoot).toBe(true);
    expect(c.image).toBe('reg/kubevirt-ts:t');
    expect(c.args).toEqual([
      'virt-exportproxy',
      '--port=8443',
      '--tls-cert-file=/etc/virt-exportproxy/certificates/tls.crt',
      '--tls-key-file=/etc/virt-exportproxy/certificates/tls.key',
      '--ca-bundle=/etc/virt-exportproxy/ca/ca-bundle',
    ]);
    expect(pod.volumes).toEqual([
      { name: 'certificates', secret: { secretName: 'kubevirt-exportproxy-certs' } },
      { name: 'ca', configMap: { name: 'kubevirt-ca', items: [{ key: 'ca-bundle', path: 'ca-bundle' }] } },
    ]);
    expect(c.readinessProbe.httpGet).toEqual({ scheme: 'HTTPS', port: 8443, path: '/healthz' });
    expect(objs[4].metadata.namespace).toBe('kubevirt');
    expect(objs[4].spec).toEqual({
      type: 'ClusterIP',
      selector: { 'kubevirt.io': 'virt-exportproxy' },
      ports: [{ port: 443, targetPort: 8443, protocol: 'TCP' }],
    });
  });

  it('is part of the install; on the dev cluster on the host network at 8447', () => {
    expect(renderInstall(o, crdsDir)['46-virt-exportproxy.yaml']).toEqual(virtExportProxyObjects(o));
    const dev = virtExportProxyObjects(
      defaultInstallOptions({ devCluster: { apiServerPort: 6443 } }),
    ) as any[];
    const spec = dev[3].spec.template.spec;
    expect(spec.hostNetwork).toBe(true);
    expect(spec.containers[0].args).toContain('--port=8447');
    expect(dev[4].spec.ports[0].targetPort).toBe(8447);
  });

  it("the certificate plan has the proxy's serving leaf for its Service's names", () => {
    expect(leafSpecs('kv')['kubevirt-exportproxy-certs']).toEqual({
      commonName: 'virt-exportproxy.kv.svc',
      dnsNames: [
        'virt-exportproxy',
        'virt-exportproxy.kv',
        'virt-exportproxy.kv.svc',
        'virt-exportproxy.kv.svc.cluster.local',
      ],
      usage: 'server',
    });
  });
});
