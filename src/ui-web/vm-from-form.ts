/** The VirtualMachine the create form describes (create-form.ts). */

/** The form's values, as typed. */
export interface VmForm {
  name: string;
  namespace: string;
  /** Where the root disk comes from. */
  source: 'containerDisk' | 'http' | 'pvc';
  /** The containerDisk image, the URL to import, or the PVC's name. */
  image: string;
  /** The DataVolume's storage request (an import only). */
  size: string;
  /** `Kind/name` of an instance type, or empty for `cores` and `memory`. */
  instancetype: string;
  /** `Kind/name` of a preference, or empty. */
  preference: string;
  cores: string;
  memory: string;
  runStrategy: string;
  network: 'pod' | 'none';
}

/** The disk sources the form offers. */
export const SOURCE_LABELS: Record<VmForm['source'], string> = {
  containerDisk: 'containerDisk image',
  http: 'import a URL into a new DataVolume',
  pvc: 'existing PersistentVolumeClaim',
};

/** `{kind, name}` of a `Kind/name` value, or undefined when empty. */
function refOf(v: string): { kind: string; name: string } | undefined {
  const i = v.indexOf('/');
  return i > 0 ? { kind: v.slice(0, i), name: v.slice(i + 1) } : undefined;
}

/**
 * The VirtualMachine of the form: with an instance type, CPU and memory come from it
 * (upstream refuses a VM that sets them too); an import becomes a dataVolumeTemplate the
 * root volume names, as `virtctl create vm --volume-import` writes it.
 */
export function vmFromForm(f: VmForm): Record<string, unknown> {
  const cores = Number(f.cores);
  const instancetype = refOf(f.instancetype);
  const preference = refOf(f.preference);
  const dvName = `${f.name}-root`;
  const volume =
    f.source === 'http'
      ? { name: 'root', dataVolume: { name: dvName } }
      : f.source === 'pvc'
        ? { name: 'root', persistentVolumeClaim: { claimName: f.image } }
        : { name: 'root', containerDisk: { image: f.image } };
  return {
    apiVersion: 'kubevirt.io/v1',
    kind: 'VirtualMachine',
    metadata: { name: f.name, namespace: f.namespace },
    spec: {
      runStrategy: f.runStrategy,
      ...(instancetype ? { instancetype } : {}),
      ...(preference ? { preference } : {}),
      ...(f.source === 'http'
        ? {
            dataVolumeTemplates: [
              {
                metadata: { name: dvName },
                spec: {
                  source: { http: { url: f.image } },
                  storage: { resources: { requests: { storage: f.size } } },
                },
              },
            ],
          }
        : {}),
      template: {
        metadata: { labels: { 'kubevirt.io/vm': f.name } },
        spec: {
          domain: {
            ...(instancetype ? {} : { cpu: { cores: Number.isFinite(cores) ? cores : f.cores } }),
            devices: {
              disks: [{ name: 'root', disk: { bus: 'virtio' } }],
              ...(f.network === 'none' ? { autoattachPodInterface: false } : {}),
            },
            ...(instancetype ? {} : { resources: { requests: { memory: f.memory } } }),
          },
          ...(f.network === 'pod' ? { networks: [{ name: 'default', pod: {} }] } : {}),
          volumes: [volume],
        },
      },
    },
  };
}
