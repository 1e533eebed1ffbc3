/**
 * The export controller over listers and a recording client (a client whose `get` finds
 * nothing), shared by the export controller's test files.
 */
// biome-ignore-all lint/suspicious/noExplicitAny: the recorded objects are read as loose JSON
import type {
  VirtualMachine,
  VirtualMachineExport,
  VirtualMachineInstance,
} from '../../../../src/api/generated/types';
import type { Lister } from '../../../../src/controllers/common/controller-ports';
import type { Pod } from '../../../../src/controllers/common/pod';
import { AlreadyExistsError, NotFoundError } from '../../../../src/controllers/runtime/errors';
import { VmExportController } from '../../../../src/controllers/virt-controller/export/export-controller';
import type { Pvc } from '../../../../src/controllers/virt-controller/snapshot/resources';

export const NOW = new Date('2026-12-04T18:00:00Z');
export const lister = <T extends { metadata?: { name?: string; namespace?: string } }>(
  items: T[],
): Lister<T> => ({
  get: (k) => items.find((o) => `${o.metadata?.namespace}/${o.metadata?.name}` === k),
  list: () => items,
});

export function exp(
  source: VirtualMachineExport['spec']['source'],
  extra: Partial<VirtualMachineExport['spec']> = {},
): VirtualMachineExport {
  return {
    metadata: { name: 'e', namespace: 'ns', uid: 'eu', creationTimestamp: '2026-12-04T17:30:00Z' },
    spec: { source, ...extra },
  };
}
export const claim = (name: string, annotations?: Record<string, string>): Pvc => ({
  metadata: { name, namespace: 'ns', ...(annotations ? { annotations } : {}) },
  spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '64Mi' } } },
  status: { phase: 'Bound' },
});
export const vm: VirtualMachine = {
  metadata: { name: 'vm', namespace: 'ns' },
  spec: {
    runStrategy: 'Halted',
    template: {
      spec: {
        domain: { devices: {} },
        volumes: [{ name: 'd', persistentVolumeClaim: { claimName: 'disk' } }],
      },
    },
  },
};

export function harness(
  e: VirtualMachineExport,
  o: {
    pods?: Pod[];
    vmis?: VirtualMachineInstance[];
    claims?: Pvc[];
    snapshots?: any[];
    contents?: any[];
    /** The export proxy's external host and certificate. */
    external?: { host: string; cert: string };
  } = {},
) {
  const created: Array<{ kind: string; obj: Record<string, any> }> = [];
  const deleted: string[] = [];
  const statuses: any[] = [];
  const events: string[] = [];
  const c = new VmExportController({
    client: {
      create: async (t: { kind: string }, obj: any) => {
        if (created.some((x) => x.kind === t.kind && x.obj.metadata.name === obj.metadata.name))
          throw new AlreadyExistsError(409, 'AlreadyExists', 'exists');
        created.push({ kind: t.kind, obj });
        return {
          ...obj,
          metadata: { ...obj.metadata, uid: `${obj.metadata.name}-uid` },
          status: { phase: 'Pending' },
        };
      },
      get: async () => {
        throw new NotFoundError(404, 'NotFound', 'no');
      },
      delete: async (t: { kind: string }, name: string) => {
        deleted.push(`${t.kind}/${name}`);
        return {};
      },
      updateStatus: async (_t: unknown, obj: any) => {
        statuses.push(obj.status);
        return obj;
      },
    } as never,
    recorder: { event: (_o, type, reason, msg) => events.push(`${type} ${reason} ${msg}`) },
    exports: lister([e]),
    exporterPods: lister(o.pods ?? []),
    claims: lister(o.claims ?? [claim('disk', { 'cdi.kubevirt.io/storage.contentType': 'kubevirt' })]),
    vms: lister([vm]),
    vmis: lister(o.vmis ?? []),
    podsIn: async () => [],
    snapshots: lister(o.snapshots ?? []),
    contents: lister(o.contents ?? []),
    volumeSnapshots: lister([]),
    certs: {
      caBundle: async () => 'CA-BUNDLE\n',
      issue: async (cn, names) => ({ cert: `CERT ${cn} ${names.join(',')}`, key: 'KEY' }),
      durationMs: 86_400_000,
      renewBeforeMs: 17_280_000,
    },
    ...(o.external ? { external: async () => o.external } : {}),
    image: 'launcher:1',
    now: () => NOW,
  });
  return { c, created, deleted, statuses, events };
}

export const VM_SOURCE = { apiGroup: 'kubevirt.io', kind: 'VirtualMachine', name: 'vm' };
