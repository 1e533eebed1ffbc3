/**
 * virt-api's admission webhooks as upstream's virt-operator registers them: each one's
 * name, path, API group, resources and operations (virt-api.ts renders them into the
 * mutating and validating webhook configurations).
 */

/** One webhook of the configurations. */
export interface Hook {
  name: string;
  path: string;
  group: string;
  resources: string[];
  operations: string[];
  /** Default Fail. */
  failurePolicy?: 'Fail' | 'Ignore';
  matchConditions?: { name: string; expression: string }[];
}

const core = (name: string, path: string, resources: string[], operations: string[]): Hook => ({
  name,
  path,
  group: 'kubevirt.io',
  resources,
  operations,
});

export const MUTATING: Hook[] = [
  core(
    'virtualmachines-mutator.kubevirt.io',
    '/virtualmachines-mutate',
    ['virtualmachines'],
    ['CREATE', 'UPDATE'],
  ),
  core(
    'virtualmachineinstances-mutator.kubevirt.io',
    '/virtualmachineinstances-mutate',
    ['virtualmachineinstances'],
    ['CREATE'],
  ),
  core(
    'migrations-mutator.kubevirt.io',
    '/migration-mutate-create',
    ['virtualmachineinstancemigrations'],
    ['CREATE'],
  ),
  {
    name: 'virtualmachineclones-mutator.kubevirt.io',
    path: '/vm-clone-mutate-create',
    group: 'clone.kubevirt.io',
    resources: ['virtualmachineclones'],
    operations: ['CREATE'],
  },
];

const it = (kind: string): Hook => ({
  name: `${kind}-validator.instancetype.kubevirt.io`,
  path: `/${kind}s-validate`,
  group: 'instancetype.kubevirt.io',
  resources: [`${kind}s`],
  operations: ['CREATE', 'UPDATE'],
});

export const VALIDATING: Hook[] = [
  core(
    'virtualmachineinstances-create-validator.kubevirt.io',
    '/virtualmachineinstances-validate-create',
    ['virtualmachineinstances'],
    ['CREATE'],
  ),
  core(
    'virtualmachineinstances-update-validator.kubevirt.io',
    '/virtualmachineinstances-validate-update',
    ['virtualmachineinstances'],
    ['UPDATE'],
  ),
  core(
    'virtualmachine-validator.kubevirt.io',
    '/virtualmachines-validate',
    ['virtualmachines'],
    ['CREATE', 'UPDATE'],
  ),
  core(
    'virtualmachinereplicaset-validator.kubevirt.io',
    '/virtualmachinereplicaset-validate',
    ['virtualmachineinstancereplicasets'],
    ['CREATE', 'UPDATE'],
  ),
  core(
    'migration-create-validator.kubevirt.io',
    '/migration-validate-create',
    ['virtualmachineinstancemigrations'],
    ['CREATE'],
  ),
  core(
    'migration-update-validator.kubevirt.io',
    '/migration-validate-update',
    ['virtualmachineinstancemigrations'],
    ['UPDATE'],
  ),
  core('kubevirt-validator.kubevirt.io', '/kubevirt-validate', ['kubevirts'], ['CREATE', 'UPDATE']),
  {
    name: 'virtualmachinepool-validator.kubevirt.io',
    path: '/virtualmachinepool-validate',
    group: 'pool.kubevirt.io',
    resources: ['virtualmachinepools'],
    operations: ['CREATE', 'UPDATE'],
  },
  {
    name: 'virtualmachinesnapshot-validator.snapshot.kubevirt.io',
    path: '/virtualmachinesnapshots-validate',
    group: 'snapshot.kubevirt.io',
    resources: ['virtualmachinesnapshots'],
    operations: ['CREATE', 'UPDATE'],
  },
  {
    name: 'virtualmachinerestore-validator.snapshot.kubevirt.io',
    path: '/virtualmachinerestores-validate',
    group: 'snapshot.kubevirt.io',
    resources: ['virtualmachinerestores'],
    operations: ['CREATE', 'UPDATE'],
  },
  {
    name: 'vm-clone-validator.kubevirt.io',
    path: '/vm-clone-validate-create',
    group: 'clone.kubevirt.io',
    resources: ['virtualmachineclones'],
    operations: ['CREATE', 'UPDATE'],
  },
  {
    name: 'virtualmachineexport-validator.export.kubevirt.io',
    path: '/virtualmachineexports-validate',
    group: 'export.kubevirt.io',
    resources: ['virtualmachineexports'],
    operations: ['CREATE', 'UPDATE'],
  },
  {
    name: 'migration-policy-validator.kubevirt.io',
    path: '/migration-policy-validate',
    group: 'migrations.kubevirt.io',
    resources: ['migrationpolicies'],
    operations: ['CREATE', 'UPDATE'],
  },
  // upstream's: a launcher pod's eviction becomes an evacuation (virt-api/pod-eviction.ts).
  // Ignore: a virt-api that is down must not block evictions (the launcher's PDB holds).
  {
    name: 'virt-launcher-eviction-interceptor.kubevirt.io',
    path: '/launcher-eviction-validate',
    group: '',
    resources: ['pods/eviction'],
    operations: ['*'],
    failurePolicy: 'Ignore',
    matchConditions: [{ name: 'only-vms', expression: 'object.metadata.name.startsWith("virt-launcher")' }],
  },
  // upstream's second webhook on the same path: a running VMI's attachment pods are not
  // evicted ahead of it (virt-api/pod-eviction.ts).
  {
    name: 'hotplug-pod-eviction-interceptor.kubevirt.io',
    path: '/launcher-eviction-validate',
    group: '',
    resources: ['pods/eviction'],
    operations: ['*'],
    failurePolicy: 'Ignore',
    matchConditions: [
      { name: 'only-hotplug-pods', expression: 'object.metadata.name.startsWith("hp-volume-")' },
    ],
  },
  it('virtualmachineinstancetype'),
  it('virtualmachineclusterinstancetype'),
  it('virtualmachinepreference'),
  it('virtualmachineclusterpreference'),
];
