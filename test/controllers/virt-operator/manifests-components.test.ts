/**
 * What the install manifests hold per component: least-privilege roles, two
 * leader-electing virt-controller replicas, a privileged virt-handler DaemonSet serving
 * device plugins, virt-api with its APIServices and webhooks (and virt-certs to fill in
 * their CA bundles), and the metrics Service, ports and certificates.
 */
import { describe, expect, it } from 'vitest';
import { byKind, type Obj, renderedManifests } from './manifests-fixtures';

describe('install manifests: components', () => {
  const { files, all } = renderedManifests();

  it('virt-controller: two replicas electing a leader, only the leader Ready, non-root, its own role and Lease role', () => {
    const d = byKind(all, 'Deployment', 'virt-controller')[0];
    expect(d.spec.replicas).toBe(2);
    const c = d.spec.template.spec.containers[0];
    expect(c.image).toBe('localhost/kubevirt-ts/kubevirt-ts:latest');
    expect(c.args).toEqual([
      'virt-controller',
      '--launcher-image',
      'localhost/kubevirt-ts/virt-launcher:latest',
      '--kubevirt-namespace',
      'kubevirt',
      '--port',
      '8182',
      '--metrics-listen',
      '0.0.0.0:8443',
      '--tls-cert-file',
      '/etc/virt-controller/certificates/tls.crt',
      '--tls-key-file',
      '/etc/virt-controller/certificates/tls.key',
    ]);
    expect(c.readinessProbe.httpGet).toEqual({ path: '/leader', port: 8182 });
    expect(d.spec.template.spec.securityContext.runAsNonRoot).toBe(true);
    expect(d.spec.template.spec.hostNetwork).toBeUndefined();
    expect(c.env.map((e: Obj) => e.name)).toEqual(['POD_NAME', 'POD_NAMESPACE']);
    const role = byKind(all, 'ClusterRole', 'kubevirt-ts-virt-controller')[0];
    // Least privilege: no wildcard; Secrets only created (the VM exports' token and TLS
    // Secrets, the upload pods' TLS Secrets) and deleted (an upload pod's, when done),
    // never read, listed or changed, but the install CA in its namespace.
    expect(JSON.stringify(role.rules)).not.toContain('*');
    const secretRules = role.rules.filter((r: Obj) => r.resources.includes('secrets'));
    expect(secretRules).toEqual([
      { apiGroups: [''], resources: ['services', 'secrets', 'configmaps'], verbs: ['create'] },
      { apiGroups: [''], resources: ['secrets'], verbs: ['delete'] },
    ]);
    // Instance type revisions: it stores and reads the VMs' ControllerRevisions.
    expect(role.rules).toContainEqual({
      apiGroups: ['apps'],
      resources: ['controllerrevisions'],
      verbs: ['get', 'list', 'watch', 'create', 'update', 'delete'],
    });
    const lease = byKind(all, 'Role', 'virt-controller')[0];
    expect(lease.metadata.namespace).toBe('kubevirt');
    expect(lease.rules).toEqual([
      {
        apiGroups: ['coordination.k8s.io'],
        resources: ['leases'],
        verbs: ['get', 'list', 'watch', 'create', 'update', 'patch'],
      },
      {
        apiGroups: [''],
        resources: ['secrets', 'configmaps'],
        resourceNames: ['kubevirt-ca'],
        verbs: ['get'],
      },
      // An export Ingress's TLS Secret (links.external.cert).
      { apiGroups: [''], resources: ['secrets'], verbs: ['get'] },
    ]);
    const binding = byKind(all, 'ClusterRoleBinding', 'kubevirt-ts-virt-controller')[0];
    expect(binding.subjects).toEqual([
      { kind: 'ServiceAccount', name: 'virt-controller', namespace: 'kubevirt' },
    ]);
  });

  it('virt-handler: a privileged DaemonSet with the kubelet pods and device-plugin dirs, serving device plugins', () => {
    const ds = byKind(all, 'DaemonSet', 'virt-handler')[0];
    const c = ds.spec.template.spec.containers[0];
    expect(c.securityContext).toEqual({ privileged: true });
    expect(c.args).toContain('--device-plugins');
    expect(c.args.slice(1, 5)).toEqual([
      '--node-name',
      '$(NODE_NAME)',
      '--pods-root',
      '/var/lib/kubelet/pods',
    ]);
    expect(c.volumeMounts.map((m: Obj) => m.mountPath)).toEqual([
      '/var/lib/kubelet/pods',
      '/var/lib/kubelet/device-plugins',
      '/var/lib/kubelet/seccomp',
      '/var/run/kubevirt',
      '/var/run/kubevirt-host-cgroup',
      '/var/run/kubevirt-libvirt-probe',
      '/etc/virt-handler/servercertificates',
      '/etc/virt-handler/clientcertificates',
    ]);
    // The host's cgroup mount (block hotplug's devices cgroup), existing, not created.
    expect(ds.spec.template.spec.volumes).toContainEqual({
      name: 'host-cgroup',
      hostPath: { path: '/sys/fs/cgroup', type: 'Directory' },
    });
    expect(c.args[c.args.indexOf('--cgroup-root') + 1]).toBe('/var/run/kubevirt-host-cgroup');
    // The migration proxy: the pod's IP (upstream's MY_POD_IP) and the client pair virt-certs makes.
    expect(c.env).toContainEqual({
      name: 'MY_POD_IP',
      valueFrom: { fieldRef: { fieldPath: 'status.podIP' } },
    });
    const arg = (flag: string) => c.args[c.args.indexOf(flag) + 1];
    expect(arg('--pod-ip-address')).toBe('$(MY_POD_IP)');
    expect(arg('--migration-client-cert-file')).toBe('/etc/virt-handler/clientcertificates/tls.crt');
    expect(arg('--migration-client-key-file')).toBe('/etc/virt-handler/clientcertificates/tls.key');
    expect(ds.spec.template.spec.volumes).toContainEqual({
      name: 'kubevirt-virt-handler-certs',
      secret: { secretName: 'kubevirt-virt-handler-certs', optional: false },
    });
    // It installs upstream's launcher seccomp profile in the kubelet's seccomp directory.
    expect(c.args.slice(c.args.indexOf('--seccomp-dir'), c.args.indexOf('--seccomp-dir') + 2)).toEqual([
      '--seccomp-dir',
      '/var/lib/kubelet/seccomp',
    ]);
    // Its REST server for virt-api, with the Secret virt-certs makes (required: it waits for it).
    expect(c.args.slice(c.args.indexOf('--kubevirt-ca'))[1]).toBe(
      '/etc/virt-handler/servercertificates/ca.crt',
    );
    expect(ds.spec.template.spec.volumes).toContainEqual({
      name: 'kubevirt-virt-handler-server-certs',
      secret: { secretName: 'kubevirt-virt-handler-server-certs', optional: false },
    });
    // Its bound, projected token names its node (virt-api's node restriction).
    expect(ds.spec.template.spec.automountServiceAccountToken).toBe(true);
    // The host probe's libvirtd: the launcher image's, unprivileged as 107, on a shared emptyDir.
    expect(c.args.slice(c.args.indexOf('--libvirt-uri'), c.args.indexOf('--libvirt-uri') + 4)).toEqual([
      '--libvirt-uri',
      'qemu:///session',
      '--libvirt-socket',
      '/var/run/kubevirt-libvirt-probe/run/libvirt/libvirt-sock',
    ]);
    const probe = ds.spec.template.spec.containers[1];
    expect(probe.name).toBe('virt-handler-libvirt');
    expect(probe.image).toBe('localhost/kubevirt-ts/virt-launcher:latest');
    expect(probe.command).toEqual(['/usr/sbin/libvirtd']);
    expect(probe.securityContext).toMatchObject({ privileged: false, runAsUser: 107, runAsNonRoot: true });
    expect(probe.volumeMounts).toEqual([
      { name: 'libvirt-probe', mountPath: '/var/run/kubevirt-libvirt-probe' },
    ]);
    expect(ds.spec.template.spec.volumes).toContainEqual({ name: 'libvirt-probe', emptyDir: {} });
    const role = byKind(all, 'ClusterRole', 'kubevirt-ts-virt-handler')[0];
    expect(JSON.stringify(role.rules)).not.toContain('*');
    // It never creates or deletes pods or VMIs.
    for (const r of role.rules.filter(
      (r: Obj) => r.resources.includes('pods') || r.resources.includes('virtualmachineinstances'),
    )) {
      expect(r.verbs).not.toContain('create');
      expect(r.verbs).not.toContain('delete');
    }
    // A migration target's handler annotates its launcher pod with the prepared domain XML.
    expect(role.rules.find((r: Obj) => r.resources.includes('pods')).verbs).toEqual([
      'get',
      'list',
      'watch',
      'update',
    ]);
  });

  it('virt-api: Deployment, Service, APIService and webhooks without a caBundle, and virt-certs to make the certificates and patch it', () => {
    const api = files['25-virt-api.yaml'] as Obj[];
    expect(api.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
      'ServiceAccount/virt-certs',
      'Role/virt-certs',
      'RoleBinding/virt-certs',
      'ClusterRole/kubevirt-ts-virt-certs',
      'ClusterRoleBinding/kubevirt-ts-virt-certs',
      'Deployment/virt-certs',
      'ServiceAccount/kubevirt-apiserver',
      'ClusterRole/kubevirt-apiserver',
      'ClusterRoleBinding/kubevirt-apiserver',
      'RoleBinding/kubevirt-apiserver-auth-reader',
      'Deployment/virt-api',
      'PodDisruptionBudget/virt-api-pdb',
      'Service/virt-api',
      'APIService/v1.subresources.kubevirt.io',
      'APIService/v1beta1.upload.cdi.kubevirt.io',
      'MutatingWebhookConfiguration/virt-api-mutator',
      'ValidatingWebhookConfiguration/virt-api-validator',
    ]);
    // upstream's PodDisruptionBudget per Deployment: one replica less than it runs.
    const apiDeployment = byKind(api, 'Deployment', 'virt-api')[0];
    expect(apiDeployment.spec.replicas).toBe(2);
    expect(byKind(api, 'PodDisruptionBudget')[0].spec).toEqual({
      minAvailable: 1,
      selector: apiDeployment.spec.selector,
    });
    const [apiService] = byKind(api, 'APIService');
    expect(apiService.spec.service).toEqual({ namespace: 'kubevirt', name: 'virt-api', port: 443 });
    expect(apiService.spec.caBundle).toBeUndefined();
    for (const cfg of [
      ...byKind(api, 'MutatingWebhookConfiguration'),
      ...byKind(api, 'ValidatingWebhookConfiguration'),
    ])
      for (const h of cfg.webhooks) {
        expect(h.clientConfig.service).toMatchObject({ namespace: 'kubevirt', name: 'virt-api', port: 443 });
        expect(h.clientConfig.caBundle).toBeUndefined();
        // The eviction interceptor alone is Ignore, as upstream's (the launcher's PDB holds).
        const evictions = h.rules[0].resources.includes('pods/eviction');
        expect(h.failurePolicy).toBe(evictions ? 'Ignore' : 'Fail');
      }
    expect(
      byKind(api, 'ValidatingWebhookConfiguration')[0].webhooks.map((h: Obj) => h.clientConfig.service.path),
    ).toContain('/virtualmachineinstances-validate-update');
    const vapi = byKind(api, 'Deployment', 'virt-api')[0].spec.template.spec;
    expect(vapi.containers[0].command).toEqual(['kubevirt-ts', 'virt-api']);
    expect(vapi.containers[0].imagePullPolicy).toBe('IfNotPresent');
    expect(vapi.volumes.map((v: Obj) => v.secret.secretName)).toEqual([
      'kubevirt-virt-api-certs',
      'kubevirt-virt-handler-certs',
      'kubevirt-ts-upload-token-signer',
    ]);
    // virt-api authorises each subresource call itself.
    expect(byKind(api, 'ClusterRole', 'kubevirt-apiserver')[0].rules).toContainEqual({
      apiGroups: ['authorization.k8s.io'],
      resources: ['subjectaccessreviews'],
      verbs: ['create'],
    });
    const certs = byKind(api, 'Deployment', 'virt-certs')[0].spec;
    expect(certs.replicas).toBe(1);
    expect(certs.template.spec.containers[0].command).toEqual([
      'kubevirt-ts',
      'virt-certs',
      '--namespace',
      'kubevirt',
    ]);
    // It may touch only the holders of the bundle, by name.
    const rules = byKind(api, 'ClusterRole', 'kubevirt-ts-virt-certs')[0].rules as Obj[];
    expect(rules.map((r) => [r.resources[0], r.resourceNames, r.verbs])).toEqual([
      ['apiservices', ['v1.subresources.kubevirt.io', 'v1beta1.upload.cdi.kubevirt.io'], ['get', 'patch']],
      ['mutatingwebhookconfigurations', ['virt-api-mutator'], ['get', 'update']],
      ['validatingwebhookconfigurations', ['virt-api-validator'], ['get', 'update']],
    ]);
  });

  it("metrics: upstream's label, a metrics port and an optional certificate Secret on each serving pod, the headless kubevirt-prometheus-metrics Service", () => {
    const svc = byKind(all, 'Service', 'kubevirt-prometheus-metrics')[0];
    expect(svc.metadata.namespace).toBe('kubevirt');
    expect(svc.metadata.labels).toMatchObject({ 'kubevirt.io': '', 'prometheus.kubevirt.io': 'true' });
    expect(svc.spec).toEqual({
      selector: { 'prometheus.kubevirt.io': 'true' },
      ports: [{ name: 'metrics', port: 443, targetPort: 'metrics', protocol: 'TCP' }],
      type: 'ClusterIP',
      clusterIP: 'None',
    });
    const pods = [
      byKind(all, 'Deployment', 'virt-controller')[0],
      byKind(all, 'DaemonSet', 'virt-handler')[0],
    ];
    const secrets: string[] = [];
    for (const w of pods) {
      const spec = w.spec.template.spec;
      expect(w.spec.template.metadata.labels['prometheus.kubevirt.io'], w.metadata.name).toBe('true');
      const c = spec.containers[0];
      expect(c.ports).toContainEqual({ name: 'metrics', containerPort: 8443, protocol: 'TCP' });
      expect(
        c.args.slice(c.args.indexOf('--metrics-listen'), c.args.indexOf('--metrics-listen') + 2),
      ).toEqual(['--metrics-listen', '0.0.0.0:8443']);
      // The TLS files come from the mounted Secret; optional, as upstream's, except the
      // handler's, whose REST server for virt-api needs it (virt-certs makes it).
      const cert = c.args[c.args.indexOf('--tls-cert-file') + 1];
      const mount = c.volumeMounts.find((m: Obj) => cert.startsWith(`${m.mountPath}/`));
      const volume = spec.volumes.find((v: Obj) => v.name === mount.name);
      expect(volume.secret.optional, w.metadata.name).toBe(w.kind !== 'DaemonSet');
      secrets.push(volume.secret.secretName);
    }
    expect(secrets).toEqual(['kubevirt-controller-certs', 'kubevirt-virt-handler-server-certs']);
    // The handler's probes are upstream's, on its metrics port over HTTPS.
    const h = pods[1].spec.template.spec.containers[0];
    expect(h.livenessProbe.httpGet).toEqual({ scheme: 'HTTPS', port: 8443, path: '/healthz' });
    expect(h.readinessProbe.httpGet).toEqual({ scheme: 'HTTPS', port: 8443, path: '/readyz' });
  });
});
