/**
 * The VirtualMachineExport controller over listers and a recording client: a stopped VM's
 * export makes the Service, token Secret, manifest ConfigMap and exporter pod (claims
 * read-only, upstream's env), then the pod's TLS Secret; a ready pod gives Ready and the
 * internal links in upstream's formats; a running VMI pauses it (pod deleted, InUse); a
 * claim that is not a disk image is served as tar.gz and dir; the TTL deletes the export;
 * an invalid source is reported, not exported.
 */
// biome-ignore-all lint/suspicious/noExplicitAny: the recorded objects are read as loose JSON
import { describe, expect, it } from 'vitest';
import type { VirtualMachineInstance } from '../../../../src/api/generated/types';
import type { Pod } from '../../../../src/controllers/common/pod';
import { claim, exp, harness, VM_SOURCE, vm } from './export-harness';

describe('VmExportController', () => {
  it("exports a stopped VM's claims: Service, token, manifests, the pod, then its certificate", async () => {
    const h = harness(exp(VM_SOURCE));
    const r = await h.c.reconcile('ns/e');
    expect(h.created.map((x) => `${x.kind}/${x.obj.metadata.name}`)).toEqual([
      'Service/virt-export-e',
      'Secret/export-token-e',
      'ConfigMap/exporter-vm-manifest-e',
      'Pod/virt-export-e',
      `Secret/${h.created[3]!.obj.spec.volumes[0].secret.secretName}`,
    ]);
    const svc = h.created[0]!.obj;
    expect(svc.spec).toEqual({
      ports: [{ name: 'export', protocol: 'TCP', port: 443, targetPort: 8443 }],
      selector: { 'kubevirt.io.virt-export-service': 'e' },
    });
    const pod = h.created[3]!.obj;
    const ctr = pod.spec.containers[0];
    expect(ctr.args).toEqual(['virt-exportserver']);
    expect(ctr.volumeMounts).toContainEqual({
      name: 'disk',
      mountPath: '/export-volumes/disk',
      readOnly: true,
    });
    const env = Object.fromEntries(ctr.env.filter((v: any) => v.value).map((v: any) => [v.name, v.value]));
    expect(env).toMatchObject({
      VOLUME0_EXPORT_PATH: '/export-volumes/disk',
      VOLUME0_EXPORT_RAW_URI: '/volumes/disk/disk.img',
      VOLUME0_EXPORT_RAW_GZIP_URI: '/volumes/disk/disk.img.gz',
      EXPORT_VM_DEF_URI: '/manifests/all',
      TOKEN_FILE: '/token/token',
      // The TTL (2 h after creation, 19:30) comes before the certificate's replacement (18:00 + 19.2 h).
      DEADLINE: '2026-12-04T19:30:00.000Z',
    });
    expect(pod.spec.securityContext).toMatchObject({ runAsNonRoot: true, runAsUser: 107, fsGroup: 107 });
    expect(pod.metadata.labels).toMatchObject({
      'kubevirt.io': 'virt-exporter',
      'kubevirt.io.virt-export-service': 'e',
    });
    const cert = h.created[4]!.obj;
    expect(cert.type).toBe('kubernetes.io/tls');
    expect(cert.metadata.ownerReferences[0]).toMatchObject({ kind: 'Pod', name: 'virt-export-e' });
    expect(Buffer.from(cert.data['tls.crt'], 'base64').toString()).toBe(
      'CERT virt-export-e.ns.svc virt-export-e,virt-export-e.ns,virt-export-e.ns.svc,virt-export-e.ns.svc.cluster.local',
    );
    const cm = h.created[2]!.obj;
    expect(JSON.parse(cm.data['dv-disk']).spec.storage.resources).toEqual({ requests: { storage: '64Mi' } });
    expect(cm.data.internal_host).toBe('virt-export-e.ns.svc');
    expect(h.statuses[0]).toMatchObject({
      phase: 'Pending',
      serviceName: 'virt-export-e',
      tokenSecretRef: 'export-token-e',
      virtualMachineName: 'vm',
      ttlExpirationTime: '2026-12-04T19:30:00.000Z',
      conditions: [expect.objectContaining({ type: 'Ready', status: 'False', reason: 'PodPending' })],
    });
    // Until the TTL.
    expect(r).toEqual({ requeueAfterMs: 90 * 60_000 });
  });

  it('is Ready with the internal links once the pod is ready', async () => {
    const h0 = harness(exp(VM_SOURCE));
    await h0.c.reconcile('ns/e');
    const pod = {
      ...h0.created[3]!.obj,
      status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
    } as Pod;
    const e = { ...exp(VM_SOURCE), status: h0.statuses[0] };
    const h = harness(e, { pods: [pod] });
    await h.c.reconcile('ns/e');
    expect(h.created).toEqual([]);
    const base = 'https://virt-export-e.ns.svc';
    expect(h.statuses[0]).toMatchObject({
      phase: 'Ready',
      conditions: [expect.objectContaining({ type: 'Ready', status: 'True', reason: 'PodReady' })],
      links: {
        internal: {
          cert: 'CA-BUNDLE',
          manifests: [
            { type: 'all', url: `${base}/internal/manifests/all` },
            { type: 'auth-header-secret', url: `${base}/internal/manifests/secret` },
          ],
          volumes: [
            {
              name: 'disk',
              formats: [
                { format: 'raw', url: `${base}/volumes/disk/disk.img` },
                { format: 'gzip', url: `${base}/volumes/disk/disk.img.gz` },
              ],
            },
          ],
        },
      },
    });
  });

  it('pauses while the VM runs: the pod is deleted and the export waits (InUse)', async () => {
    const pod = { metadata: { name: 'virt-export-e', namespace: 'ns' }, status: { phase: 'Running' } } as Pod;
    const vmi = {
      metadata: { name: 'vm', namespace: 'ns' },
      spec: { domain: { devices: {} } },
      status: { phase: 'Running' },
    } as VirtualMachineInstance;
    const h = harness(exp(VM_SOURCE), { pods: [pod], vmis: [vmi] });
    expect(await h.c.reconcile('ns/e')).toEqual({ requeueAfterMs: 3000 });
    expect(h.deleted).toEqual(['Pod/virt-export-e']);
    expect(h.events).toContain('Warning ExportPaused Virtual Machine ns/vm is running');
    expect(h.statuses[0]).toMatchObject({
      phase: 'Pending',
      conditions: [expect.objectContaining({ reason: 'InUse', message: 'Virtual Machine ns/vm is running' })],
    });
  });

  it("serves a claim without a disk image as tar.gz and dir, with the user's token Secret", async () => {
    const h = harness(exp({ kind: 'PersistentVolumeClaim', name: 'files' }, { tokenSecretRef: 'mine' }), {
      claims: [claim('files')],
    });
    await h.c.reconcile('ns/e');
    expect(h.created.map((x) => x.kind)).toEqual(['Service', 'Pod', 'Secret']);
    const env = h.created[1]!.obj.spec.containers[0].env;
    expect(env).toContainEqual({ name: 'VOLUME0_EXPORT_ARCHIVE_URI', value: '/volumes/files/disk.tar.gz' });
    expect(env).toContainEqual({ name: 'VOLUME0_EXPORT_DIR_URI', value: '/volumes/files/dir/' });
    expect(h.created[1]!.obj.spec.volumes).toContainEqual({ name: 'token', secret: { secretName: 'mine' } });
    expect(h.statuses[0]).toMatchObject({ tokenSecretRef: 'mine' });
  });

  it("restores a VMSnapshot's volumes into claims it owns, then serves them under the original names", async () => {
    const snap = {
      metadata: { name: 's', namespace: 'ns' },
      spec: { source: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'vm' } },
      status: { readyToUse: true, virtualMachineSnapshotContentName: 'c' },
    };
    const content = {
      metadata: { name: 'c', namespace: 'ns' },
      spec: {
        source: { virtualMachine: vm },
        volumeBackups: [
          {
            volumeName: 'd',
            volumeSnapshotName: 'vs-d',
            persistentVolumeClaim: { metadata: { name: 'disk' }, spec: claim('disk').spec },
          },
        ],
      },
    };
    const source = { apiGroup: 'snapshot.kubevirt.io', kind: 'VirtualMachineSnapshot', name: 's' };
    const h = harness(exp(source), { claims: [], snapshots: [snap], contents: [content] });
    await h.c.reconcile('ns/e');
    const restore = h.created.find((x) => x.kind === 'PersistentVolumeClaim')!.obj;
    expect(restore.metadata).toMatchObject({
      name: 'e-disk',
      annotations: { 'cdi.kubevirt.io/storage.contentType': 'kubevirt' },
      ownerReferences: [expect.objectContaining({ kind: 'VirtualMachineExport', name: 'e' })],
    });
    expect(restore.spec.dataSource).toEqual({
      apiGroup: 'snapshot.storage.k8s.io',
      kind: 'VolumeSnapshot',
      name: 'vs-d',
    });
    expect(h.created.some((x) => x.kind === 'Pod')).toBe(false);
    // The restored claim exists: the pod serves it, the link names the original claim.
    const restored = { ...claim('e-disk', { 'cdi.kubevirt.io/storage.contentType': 'kubevirt' }) };
    const h2 = harness(exp(source), { claims: [restored], snapshots: [snap], contents: [content] });
    await h2.c.reconcile('ns/e');
    const pod = h2.created.find((x) => x.kind === 'Pod')!.obj;
    expect(pod.spec.volumes).toContainEqual({
      name: 'e-disk',
      persistentVolumeClaim: { claimName: 'e-disk', readOnly: true },
    });
    const ready = {
      ...pod,
      status: { phase: 'Running', conditions: [{ type: 'Ready', status: 'True' }] },
    } as Pod;
    const h3 = harness(
      { ...exp(source), status: h2.statuses[0] },
      { claims: [restored], snapshots: [snap], contents: [content], pods: [ready] },
    );
    await h3.c.reconcile('ns/e');
    expect(h3.statuses[0].virtualMachineName).toBe('vm');
    expect(h3.statuses[0].links.internal.volumes).toEqual([
      {
        name: 'disk',
        formats: [
          { format: 'raw', url: 'https://virt-export-e.ns.svc/volumes/e-disk/disk.img' },
          { format: 'gzip', url: 'https://virt-export-e.ns.svc/volumes/e-disk/disk.img.gz' },
        ],
      },
    ]);
    expect(h3.statuses[0].conditions).toContainEqual(
      expect.objectContaining({ type: 'VolumesCreated', status: 'True', reason: 'AllPVCsReady' }),
    );
  });

  it('deletes the export at its TTL', async () => {
    const h = harness(exp(VM_SOURCE, { ttlDuration: '20m' }));
    expect(await h.c.reconcile('ns/e')).toBeUndefined();
    expect(h.deleted).toEqual(['VirtualMachineExport/e']);
    expect(h.created).toEqual([]);
  });

  it('reports an invalid source and exports nothing', async () => {
    const h = harness(exp({ apiGroup: 'backup.kubevirt.io', kind: 'VirtualMachineBackup', name: 'b' }));
    await h.c.reconcile('ns/e');
    expect(h.created).toEqual([]);
    expect(h.statuses[0].conditions[0]).toMatchObject({
      reason: 'InvalidSpec',
      message: 'spec.source.kind: VirtualMachineBackup sources are not supported by kubevirt-ts yet',
    });
  });
});
