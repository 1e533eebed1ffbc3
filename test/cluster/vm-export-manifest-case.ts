/**
 * Issue 27's manifest round trip on the real cluster (a case of vm-export.test.ts): a
 * stopped VM whose claim holds the tiny guest's bootable disk (its qcow2 converted to raw
 * on the host, copied into the claim's `disk.img` by a pod) is exported with the built
 * `virtctl vmexport create`; `virtctl vmexport download --manifest --include-secret` (YAML,
 * as a user gets it) prints the CA ConfigMap, the VM, a DataVolume importing the claim's
 * `disk.img.gz` from the export and the header Secret. Applied with `kubectl apply` in a
 * fresh namespace (the objects' namespace rewritten to it: upstream's manifests name the
 * source namespace, and upstream's own tests move them the same way), the DataVolume's
 * importer fetches the image over HTTPS from `virt-export-<name>.<ns>.svc`, a name only
 * cluster DNS resolves (scripts/cluster/dns.ts), trusting the CA ConfigMap and sending the
 * token from the Secret; the new VM, started with `virtctl start`, boots the guest from the
 * imported disk (the boot marker on its serial console, once).
 */
import { execFile } from 'node:child_process';
import { mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import type { V1Pod } from '@kubernetes/client-node';
import { expect } from 'vitest';
import { parseAllDocuments, stringify } from 'yaml';
import type { DataVolume } from '../../src/api/generated/cdi/types';
import type { VirtualMachineExport } from '../../src/api/generated/types';
import { createTestNamespace, deleteNamespaceAndWait } from '../support/cluster-namespace';
import { kubectlBin, kubectlExecAsync } from '../support/cluster-pods';
import { BOOT_MARKER, bootDiskPath } from '../support/guest';
import { oneDiskVm, type StorageCluster } from './storage-cluster';

const run = promisify(execFile);
const VIRTCTL = resolve('dist/cli/virtctl.js');
const VM = 'vm-boot';
const EXP = 'bootexp';
const CLAIM = 'boot';
const CDI = { group: 'cdi.kubevirt.io', version: 'v1beta1', plural: 'datavolumes' };
const EXPORTS = { group: 'export.kubevirt.io', version: 'v1', plural: 'virtualmachineexports' };

type Obj = {
  kind: string;
  metadata: { name: string; namespace?: string };
  spec?: { source?: { http?: unknown }; runStrategy?: string };
};

/** The case; `target` is the fresh namespace the manifests go to (deleted at the end). */
export async function exportManifestCase(fx: StorageCluster, target: string): Promise<void> {
  const { core, custom, info } = fx;
  const ns = fx.namespace;
  const work = join(fx.dir, 'manifest-case');
  mkdirSync(work, { recursive: true });
  const virtctl = (namespace: string, ...args: string[]) =>
    run(process.execPath, [VIRTCTL, ...args, '-n', namespace, '--kubeconfig', info.kubeconfigPath], {
      timeout: 180_000,
      maxBuffer: 16 << 20,
    });
  const readDv = async () =>
    (await custom
      .getNamespacedCustomObject({ ...CDI, namespace: target, name: CLAIM })
      .catch(() => undefined)) as DataVolume | undefined;
  const diagnose = async () => {
    const pods = (await core.listNamespacedPod({ namespace: target })).items.map(
      (p) =>
        `${p.metadata?.name} ${p.status?.phase} ${JSON.stringify(p.status?.containerStatuses?.map((c) => c.state))}`,
    );
    const events = (await core.listNamespacedEvent({ namespace: target })).items.map(
      (e) => `${e.involvedObject.kind}/${e.involvedObject.name} ${e.reason}: ${e.message}`,
    );
    return `DataVolume: ${JSON.stringify((await readDv())?.status)}\n${target} pods:\n${pods.join('\n')}\n${target} events:\n${events.join('\n')}`;
  };

  try {
    // The bootable disk: the guest's qcow2 as raw, copied into the claim by a pod.
    await run('qemu-img', ['convert', '-f', 'qcow2', '-O', 'raw', bootDiskPath, join(work, 'boot.raw')]);
    await core.createNamespacedPersistentVolumeClaim({
      namespace: ns,
      body: {
        metadata: { name: CLAIM, annotations: { 'cdi.kubevirt.io/storage.contentType': 'kubevirt' } },
        spec: {
          storageClassName: 'kubevirt-ts-local',
          accessModes: ['ReadWriteOnce'],
          resources: { requests: { storage: '64Mi' } },
        },
      },
    });
    await core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: 'boot-writer' },
        spec: {
          restartPolicy: 'Never',
          automountServiceAccountToken: false,
          volumes: [
            { name: 'd', persistentVolumeClaim: { claimName: CLAIM } },
            { name: 'src', hostPath: { path: realpathSync(work), type: 'Directory' } },
          ],
          containers: [
            {
              name: 'main',
              image: info.images['virt-launcher'],
              imagePullPolicy: 'Never',
              command: ['sh', '-c', 'set -e; cp --sparse=always /src/boot.raw /data/disk.img; sync'],
              volumeMounts: [
                { name: 'd', mountPath: '/data' },
                { name: 'src', mountPath: '/src', readOnly: true },
              ],
            },
          ],
        },
      },
    });
    await fx.waitOrDiagnose(
      'boot-writer Succeeded',
      async () => {
        const p = await core.readNamespacedPod({ name: 'boot-writer', namespace: ns });
        if (p.status?.phase === 'Failed') throw new Error(`boot-writer failed: ${JSON.stringify(p.status)}`);
        return p.status?.phase === 'Succeeded' ? p : undefined;
      },
      240_000,
      500,
    );
    await core.deleteNamespacedPod({ name: 'boot-writer', namespace: ns });
    await custom.createNamespacedCustomObject({
      group: 'kubevirt.io',
      version: 'v1',
      plural: 'virtualmachines',
      namespace: ns,
      body: oneDiskVm({
        name: VM,
        namespace: ns,
        runStrategy: 'Halted',
        volume: { persistentVolumeClaim: { claimName: CLAIM } },
      }),
    });

    await virtctl(ns, 'vmexport', 'create', EXP, '--vm', VM);
    await fx.waitOrDiagnose(
      'the export Ready',
      async () => {
        const e = (await custom
          .getNamespacedCustomObject({ ...EXPORTS, namespace: ns, name: EXP })
          .catch(() => undefined)) as VirtualMachineExport | undefined;
        return e?.status?.phase === 'Ready' ? e : undefined;
      },
      240_000,
      500,
    );
    const { stdout } = await virtctl(
      ns,
      'vmexport',
      'download',
      EXP,
      '--manifest',
      '--include-secret',
      '--port-forward',
    );
    const objects = parseAllDocuments(stdout)
      .map((d) => d.toJS() as Obj | null)
      .filter((o): o is Obj => o !== null);
    expect(objects.map((o) => `${o.kind}/${o.metadata.name}`)).toEqual([
      `ConfigMap/export-ca-cm-${EXP}`,
      `VirtualMachine/${VM}`,
      `DataVolume/${CLAIM}`,
      `Secret/header-secret-${EXP}`,
    ]);
    expect(objects[2]?.spec?.source?.http).toEqual({
      url: `https://virt-export-${EXP}.${ns}.svc/volumes/${CLAIM}/disk.img.gz`,
      certConfigMap: `export-ca-cm-${EXP}`,
      secretExtraHeaders: [`header-secret-${EXP}`],
    });
    expect(objects[1]?.spec?.runStrategy).toBe('Halted');
    for (const o of objects) if (o.metadata.namespace) o.metadata.namespace = target;
    const file = join(work, 'manifest.yaml');
    writeFileSync(file, objects.map((o) => `${stringify(o)}---\n`).join(''));

    await createTestNamespace(core, target);
    await run(kubectlBin, ['--kubeconfig', info.kubeconfigPath, 'apply', '-n', target, '-f', file]);
    await fx.waitOrDiagnose(
      `DataVolume ${target}/${CLAIM} imported from the export`,
      async () => {
        const dv = await readDv();
        if (dv?.status?.phase === 'Failed' || (dv?.status?.restartCount ?? 0) > 0)
          throw new Error(`the import failed: ${await diagnose()}`);
        return dv?.status?.phase === 'Succeeded' ? dv : undefined;
      },
      300_000,
      500,
      diagnose,
    );

    await virtctl(target, 'start', VM);
    const launcher = await fx.waitOrDiagnose(
      `the launcher pod of ${target}/${VM} Running`,
      async () =>
        (
          await core.listNamespacedPod({
            namespace: target,
            labelSelector: `kubevirt.io=virt-launcher,vm.kubevirt.io/name=${VM}`,
          })
        ).items.find((p: V1Pod) => p.status?.phase === 'Running' && !p.metadata?.deletionTimestamp),
      240_000,
      1000,
      diagnose,
    );
    const con = await fx.launcherConsole(launcher);
    try {
      await con.waitFor(BOOT_MARKER, 240_000);
    } finally {
      con.close();
    }
    // One boot: the guest came up from the imported disk at the first try.
    const grep = kubectlExecAsync(info.kubeconfigPath, target, launcher.metadata?.name ?? '', [
      'busybox',
      'grep',
      '-c',
      BOOT_MARKER,
      `/var/run/kubevirt-private/${launcher.metadata?.labels?.['kubevirt.io/created-by']}/virt-serial0-log`,
    ]);
    await grep.exited;
    expect(grep.out().trim()).toBe('1');
  } finally {
    // The target namespace while the CSI driver runs (its claim's volume leaves the pool);
    // the export and the source VM go with the file's namespace.
    await deleteNamespaceAndWait(core, target, 180_000).catch((e) => process.stderr.write(`${e}\n`));
    await virtctl(ns, 'vmexport', 'delete', EXP).catch(() => undefined);
  }
}
