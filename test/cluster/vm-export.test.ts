/**
 * Issue 27's VirtualMachineExport proof on the real one-node cluster: the components
 * installed from the manifests (virt-controller running the export controller, the
 * launcher image as the export server), the project's CSI driver in this process with the
 * real csi-provisioner (test/cluster/csi-stack.ts). A pod writes 8 MiB of random bytes and
 * a sparse tail into a claim's `disk.img` (a KubeVirt-content claim, as a DataVolume's);
 * a stopped VM has that claim as its disk. The built `virtctl vmexport create --vm` makes
 * the export; it becomes Ready with the exporter pod (claim read-only), its Service and the
 * internal links in upstream's formats, the cert being the install's CA bundle;
 * `virtctl vmexport download --port-forward --format raw` fetches the gzip link and
 * gunzips it to the claim's sha256; `--manifest` prints the VM and a DataVolume importing
 * from the export; requests without the token or with another get 401; starting the VM
 * pauses the export (its pod deleted, InUse) until the VM stops; `vmexport delete` removes
 * the pod, the Service and the token Secret. A VirtualMachineSnapshot of the VM is
 * exported too: its volume restored into a claim the export owns, the same sha256
 * downloaded, the claim gone with the export. Prints `BENCH export export_mib_s` beside a
 * `dd` read of the same file in the exporter pod (no guest boots there: the VM's disk is
 * data; its QEMU runs the firmware only while it is started). Last, a VM with a bootable
 * disk is exported and its manifests, applied in a fresh namespace, import the disk over
 * HTTPS through cluster DNS and boot it: vm-export-manifest-case.ts.
 *
 * The driver's one name registers once with a kubelet: like the other CSI cluster test
 * files, this one takes the host lock `csi-driver` for its whole run.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { CoreV1Api, CustomObjectsApi, KubeConfig } from '@kubernetes/client-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ClusterInfo } from '../../scripts/cluster/state';
import type { VirtualMachineExport } from '../../src/api/generated/types';
import { forwardPort, get } from '../../src/cli/commands/virtctl/vmexport-transfer';
import { kubectlExecAsync } from '../support/cluster-pods';
import { waitFor } from '../support/wait';
import { csiClusterTestsEnabled } from './csi-stack';
import { oneDiskVm, storageClusterFixture } from './storage-cluster';
import { exportManifestCase } from './vm-export-manifest-case';
import { exportProxyCase } from './vm-export-proxy-case';

const enabled = csiClusterTestsEnabled('VM exports on the cluster');
const NS = 'cluster-vmexport';
const VM = 'vm-export';
const EXP = 'exp';
const EXPORTS = { group: 'export.kubevirt.io', version: 'v1', plural: 'virtualmachineexports' };
const VIRTCTL = resolve('dist/cli/virtctl.js');
const IMAGE_MIB = 32;

describe.skipIf(!enabled)('VirtualMachineExport on the real cluster', () => {
  const fx = storageClusterFixture({ namespace: NS, tmpPrefix: 'kvts-export-', snapshots: true });
  let info: ClusterInfo;
  let kc: KubeConfig;
  let core: CoreV1Api;
  let custom: CustomObjectsApi;
  let dir = '';
  let volumeSha = '';

  /** The built virtctl against the cluster, in a child process (the driver runs in this one). */
  const virtctl = (args: string[], timeoutMs = 180_000) =>
    new Promise<{ out: string; err: string }>((res, rej) => {
      const child = spawn(
        process.execPath,
        [VIRTCTL, ...args, '--kubeconfig', info.kubeconfigPath, '-n', NS],
        {
          stdio: ['ignore', 'pipe', 'pipe'],
        },
      );
      let out = '';
      let err = '';
      child.stdout.on('data', (d) => {
        out += d;
      });
      child.stderr.on('data', (d) => {
        err += d;
      });
      const t = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      child.on('close', (code) => {
        clearTimeout(t);
        if (code === 0) res({ out, err });
        else rej(new Error(`virtctl ${args.slice(0, 2).join(' ')} exited ${code}: ${err.slice(-2000)}`));
      });
    });
  const readExport = async () =>
    (await custom
      .getNamespacedCustomObject({ ...EXPORTS, namespace: NS, name: EXP })
      .catch(() => undefined)) as VirtualMachineExport | undefined;
  const diagnose = async () =>
    `export: ${JSON.stringify((await readExport())?.status)}\n${await fx.diagnose(['virt-controller'], 30)}`;
  const waitOrDiagnose = <T>(what: string, f: () => Promise<T | undefined>, ms: number) =>
    waitFor(what, f, ms, 500).catch(async (e) => {
      throw new Error(`${e}\n${await diagnose()}`);
    });
  const phaseIs = (phase: string, reason?: string) => async () => {
    const e = await readExport();
    const ready = e?.status?.conditions?.find((c) => c.type === 'Ready');
    return e?.status?.phase === phase && (!reason || ready?.reason === reason) ? e : undefined;
  };
  const exporterPod = () =>
    core.readNamespacedPod({ name: `virt-export-${EXP}`, namespace: NS }).catch(() => undefined);

  beforeAll(async () => {
    await fx.setUp();
    ({ info, kc, core, custom, dir } = fx);
    await core.createNamespacedPersistentVolumeClaim({
      namespace: NS,
      body: {
        metadata: { name: 'disk', annotations: { 'cdi.kubevirt.io/storage.contentType': 'kubevirt' } },
        spec: {
          storageClassName: 'kubevirt-ts-local',
          accessModes: ['ReadWriteOnce'],
          resources: { requests: { storage: '64Mi' } },
        },
      },
    });
    // The volume's content: random bytes, then a sparse tail; its sha256 as the pod's message.
    await core.createNamespacedPod({
      namespace: NS,
      body: {
        metadata: { name: 'writer' },
        spec: {
          restartPolicy: 'Never',
          automountServiceAccountToken: false,
          volumes: [{ name: 'd', persistentVolumeClaim: { claimName: 'disk' } }],
          containers: [
            {
              name: 'main',
              image: info.images['virt-launcher'],
              imagePullPolicy: 'Never',
              command: [
                'sh',
                '-c',
                `set -e; head -c 8388608 /dev/urandom > /data/disk.img; truncate -s ${IMAGE_MIB}M /data/disk.img; sync; sha256sum /data/disk.img | cut -d' ' -f1 > /dev/termination-log`,
              ],
              volumeMounts: [{ name: 'd', mountPath: '/data' }],
            },
          ],
        },
      },
    });
    const writer = await waitOrDiagnose(
      'writer Succeeded',
      async () => {
        const p = await core.readNamespacedPod({ name: 'writer', namespace: NS });
        if (p.status?.phase === 'Failed') throw new Error(`writer failed: ${JSON.stringify(p.status)}`);
        return p.status?.phase === 'Succeeded' ? p : undefined;
      },
      240_000,
    );
    volumeSha = writer.status?.containerStatuses?.[0]?.state?.terminated?.message?.trim() ?? '';
    expect(volumeSha).toMatch(/^[0-9a-f]{64}$/);
    await core.deleteNamespacedPod({ name: 'writer', namespace: NS });
    await custom.createNamespacedCustomObject({
      group: 'kubevirt.io',
      version: 'v1',
      plural: 'virtualmachines',
      namespace: NS,
      body: oneDiskVm({
        name: VM,
        namespace: NS,
        runStrategy: 'Halted',
        memory: '64Mi',
        volume: { persistentVolumeClaim: { claimName: 'disk' } },
      }),
    });
  }, 1_200_000);

  afterAll(() => fx.tearDown(), 400_000);

  it('exports a stopped VM: links, download with gzip, manifests, token, pause while running, delete', {
    timeout: 900_000,
  }, async () => {
    const created = await virtctl(['vmexport', 'create', EXP, '--vm', VM]);
    expect(created.err).toContain(`VirtualMachineExport '${NS}/${EXP}' created successfully`);
    const ready = await waitOrDiagnose('export Ready', phaseIs('Ready'), 240_000);
    const host = `virt-export-${EXP}.${NS}.svc`;
    const caBundle = (await core.readNamespacedConfigMap({ name: 'kubevirt-ca', namespace: 'kubevirt' }))
      .data?.['ca-bundle'];
    expect(ready.status).toMatchObject({
      serviceName: `virt-export-${EXP}`,
      tokenSecretRef: `secret-${EXP}`,
      virtualMachineName: VM,
      links: {
        internal: {
          cert: caBundle?.trim(),
          volumes: [
            {
              name: 'disk',
              formats: [
                { format: 'raw', url: `https://${host}/volumes/disk/disk.img` },
                { format: 'gzip', url: `https://${host}/volumes/disk/disk.img.gz` },
              ],
            },
          ],
          manifests: [
            { type: 'all', url: `https://${host}/internal/manifests/all` },
            { type: 'auth-header-secret', url: `https://${host}/internal/manifests/secret` },
          ],
        },
      },
    });
    const pod = await exporterPod();
    expect(pod?.spec?.containers[0]?.volumeMounts).toContainEqual(
      expect.objectContaining({ name: 'disk', mountPath: '/export-volumes/disk', readOnly: true }),
    );
    const svc = await core.readNamespacedService({ name: `virt-export-${EXP}`, namespace: NS });
    expect(svc.spec?.ports?.[0]).toMatchObject({ port: 443, targetPort: 8443 });

    // The reference: a bare read of the same file in the exporter pod (page cache warm for both).
    const dd = kubectlExecAsync(info.kubeconfigPath, NS, `virt-export-${EXP}`, [
      'dd',
      'if=/export-volumes/disk/disk.img',
      'of=/dev/null',
      'bs=1M',
    ]);
    expect(await dd.exited).toBe(0);
    const ddSeconds = Number(/copied, ([\d.]+) s/.exec(dd.out())?.[1]);
    const out = join(dir, 'disk.img');
    const started = Date.now();
    const dl = await virtctl([
      'vmexport',
      'download',
      EXP,
      '--output',
      out,
      '--format',
      'raw',
      '--port-forward',
    ]);
    const seconds = (Date.now() - started) / 1000;
    expect(dl.err).toContain('Download finished successfully');
    const got = readFileSync(out);
    expect(got.length).toBe(IMAGE_MIB * 2 ** 20);
    expect(createHash('sha256').update(got).digest('hex')).toBe(volumeSha);
    console.log(
      `BENCH export export_mib_s=${(IMAGE_MIB / seconds).toFixed(1)} (virtctl vmexport download --port-forward --format raw of a ${IMAGE_MIB} MiB disk.img, 8 MiB random + sparse tail, gzip on the wire, the process's whole run) reference_dd_mib_s=${(IMAGE_MIB / ddSeconds).toFixed(1)} (dd of the same file in the exporter pod)`,
    );

    const manifest = await virtctl([
      'vmexport',
      'download',
      EXP,
      '--manifest',
      '--manifest-output-format',
      'json',
      '--port-forward',
    ]);
    const list = JSON.parse(manifest.out) as {
      items: Array<{ kind: string; metadata: { name: string }; spec?: { source?: { http?: unknown } } }>;
    };
    expect(list.items.map((i) => `${i.kind}/${i.metadata.name}`)).toEqual([
      `ConfigMap/export-ca-cm-${EXP}`,
      `VirtualMachine/${VM}`,
      'DataVolume/disk',
    ]);
    expect(list.items[2]?.spec?.source?.http).toEqual({
      url: `https://${host}/volumes/disk/disk.img.gz`,
      certConfigMap: `export-ca-cm-${EXP}`,
      secretExtraHeaders: [`header-secret-${EXP}`],
    });

    // The token: none or another is 401; the right one reads the image (a range of it).
    const fwd = await forwardPort(kc, NS, `virt-export-${EXP}`, 8443, 0);
    try {
      const url = `https://${host}/volumes/disk/disk.img`;
      const common = { url, ca: caBundle ?? '', connectTo: `127.0.0.1:${fwd.port}` };
      const status = async (token: string, headers?: Record<string, string>) => {
        const res = await get({ ...common, token, headers });
        const chunks: Buffer[] = [];
        for await (const c of res) chunks.push(c as Buffer);
        return { code: res.statusCode, body: Buffer.concat(chunks) };
      };
      expect((await status('')).code).toBe(401);
      expect((await status('not-the-token')).code).toBe(401);
      const secret = await core.readNamespacedSecret({ name: `secret-${EXP}`, namespace: NS });
      const token = Buffer.from(secret.data?.token ?? '', 'base64').toString();
      const part = await status(token, { range: 'bytes=0-15' });
      expect(part.code).toBe(206);
      expect(part.body.equals(got.subarray(0, 16))).toBe(true);
      // The transfer alone (no process start, no wait): raw, and gzip as served.
      const timed = async (path: string) => {
        const t0 = process.hrtime.bigint();
        const r = await get({ ...common, url: `https://${host}${path}`, token });
        let n = 0;
        for await (const c of r) n += (c as Buffer).length;
        return { n, mibS: IMAGE_MIB / (Number(process.hrtime.bigint() - t0) / 1e9) };
      };
      const raw = await timed('/volumes/disk/disk.img');
      const gz = await timed('/volumes/disk/disk.img.gz');
      expect(raw.n).toBe(IMAGE_MIB * 2 ** 20);
      console.log(
        `BENCH export transfer_raw_mib_s=${raw.mibS.toFixed(1)} transfer_gzip_mib_s=${gz.mibS.toFixed(1)} (${gz.n} bytes on the wire) (one GET through the API server's pods/portforward, ${IMAGE_MIB} MiB image)`,
      );
    } finally {
      await fwd.close();
    }

    // Starting the VM pauses the export (upstream's ExportPaused); stopping it resumes.
    await virtctl(['start', VM]);
    const paused = await waitOrDiagnose(
      'export paused (InUse) with its pod gone',
      async () => {
        const e = await phaseIs('Pending', 'InUse')();
        return e && !(await exporterPod()) ? e : undefined;
      },
      240_000,
    );
    expect(paused.status?.conditions?.find((c) => c.type === 'Ready')?.message).toBe(
      `Virtual Machine ${NS}/${VM} is running`,
    );
    expect(paused.status?.links).toEqual({});
    await virtctl(['stop', VM]);
    await waitOrDiagnose('export Ready again', phaseIs('Ready'), 300_000);

    await virtctl(['vmexport', 'delete', EXP]);
    await waitOrDiagnose(
      'the pod, Service and token Secret gone',
      async () => {
        const gone = async (f: () => Promise<unknown>) =>
          await f()
            .then(() => false)
            .catch(() => true);
        const all = [
          await gone(() => core.readNamespacedPod({ name: `virt-export-${EXP}`, namespace: NS })),
          await gone(() => core.readNamespacedService({ name: `virt-export-${EXP}`, namespace: NS })),
          await gone(() => core.readNamespacedSecret({ name: `secret-${EXP}`, namespace: NS })),
        ];
        return all.every(Boolean) ? true : undefined;
      },
      120_000,
    );
  });

  it('exports a VM snapshot: its volume restored into a claim the export owns, the same bytes downloaded', {
    timeout: 600_000,
  }, async () => {
    await custom.createNamespacedCustomObject({
      group: 'snapshot.kubevirt.io',
      version: 'v1beta1',
      plural: 'virtualmachinesnapshots',
      namespace: NS,
      body: {
        apiVersion: 'snapshot.kubevirt.io/v1beta1',
        kind: 'VirtualMachineSnapshot',
        metadata: { name: 'snap' },
        spec: { source: { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: VM } },
      },
    });
    await waitOrDiagnose(
      'the VM snapshot ready',
      async () => {
        const snap = (await custom
          .getNamespacedCustomObject({
            group: 'snapshot.kubevirt.io',
            version: 'v1beta1',
            plural: 'virtualmachinesnapshots',
            namespace: NS,
            name: 'snap',
          })
          .catch(() => undefined)) as { status?: { readyToUse?: boolean } } | undefined;
        return snap?.status?.readyToUse ? snap : undefined;
      },
      180_000,
    );
    await virtctl(['vmexport', 'create', 'snapexp', '--snapshot', 'snap']);
    const ready = await waitOrDiagnose(
      'the snapshot export Ready',
      async () => {
        const e = (await custom
          .getNamespacedCustomObject({ ...EXPORTS, namespace: NS, name: 'snapexp' })
          .catch(() => undefined)) as VirtualMachineExport | undefined;
        return e?.status?.phase === 'Ready' ? e : undefined;
      },
      240_000,
    );
    const host = `virt-export-snapexp.${NS}.svc`;
    expect(ready.status?.virtualMachineName).toBe(VM);
    expect(ready.status?.links?.internal?.volumes).toEqual([
      {
        name: 'disk',
        formats: [
          { format: 'raw', url: `https://${host}/volumes/snapexp-disk/disk.img` },
          { format: 'gzip', url: `https://${host}/volumes/snapexp-disk/disk.img.gz` },
        ],
      },
    ]);
    const restored = await core.readNamespacedPersistentVolumeClaim({ name: 'snapexp-disk', namespace: NS });
    expect(restored.spec?.dataSource).toMatchObject({
      kind: 'VolumeSnapshot',
      apiGroup: 'snapshot.storage.k8s.io',
    });
    expect(restored.metadata?.ownerReferences?.[0]).toMatchObject({
      kind: 'VirtualMachineExport',
      name: 'snapexp',
    });
    const out = join(dir, 'snap.img');
    await virtctl(['vmexport', 'download', 'snapexp', '--output', out, '--format', 'raw', '--port-forward']);
    expect(createHash('sha256').update(readFileSync(out)).digest('hex')).toBe(volumeSha);
    await virtctl(['vmexport', 'delete', 'snapexp']);
    await waitOrDiagnose(
      'the restored claim gone with the export',
      async () =>
        (await core.readNamespacedPersistentVolumeClaim({ name: 'snapexp-disk', namespace: NS }).then(
          () => false,
          () => true,
        ))
          ? true
          : undefined,
      120_000,
    );
  });

  // vm-export-proxy-case.ts: an Ingress to virt-exportproxy, links.external, a download through it.
  it('serves an export through virt-exportproxy', { timeout: 600_000 }, () =>
    exportProxyCase({
      info,
      kc,
      core,
      custom,
      namespace: NS,
      vm: VM,
      volumeSha,
      virtctl,
      waitOrDiagnose,
      imageBytes: IMAGE_MIB * 2 ** 20,
    }),
  );

  it(
    'applies the downloaded manifests in a fresh namespace: the disk imported over HTTPS, the guest boots',
    { timeout: 900_000 },
    () => exportManifestCase(fx, `${NS}-import`),
  );
});
