/**
 * The aggregated user roles, as upstream's kubevirt.io:view, kubevirt.io:edit and
 * kubevirt.io:admin: labelled to aggregate into Kubernetes' view, edit and admin roles,
 * so a namespace's editors can run VMs there and its viewers can see them.
 */
import type { KubeObject } from '../../runtime/types';
import { componentLabels } from './install-options';

const READ = ['get', 'list', 'watch'];
const WRITE = ['get', 'delete', 'create', 'update', 'patch', 'list', 'watch', 'deletecollection'];

/** The kubevirt.io workload resources users manage. */
const WORKLOADS = [
  'virtualmachines',
  'virtualmachineinstances',
  'virtualmachineinstancepresets',
  'virtualmachineinstancereplicasets',
  'virtualmachineinstancemigrations',
];
/** subresources.kubevirt.io actions of virtctl (start, stop, console, ...). */
const VMI_ACTIONS = [
  'virtualmachineinstances/console',
  'virtualmachineinstances/vnc',
  'virtualmachineinstances/vnc/screenshot',
  'virtualmachineinstances/portforward',
  'virtualmachineinstances/pause',
  'virtualmachineinstances/unpause',
  'virtualmachineinstances/softreboot',
  'virtualmachineinstances/addvolume',
  'virtualmachineinstances/removevolume',
  'virtualmachineinstances/freeze',
  'virtualmachineinstances/unfreeze',
  'virtualmachineinstances/evacuate/cancel',
];
const VMI_READS = [
  'virtualmachineinstances/guestosinfo',
  'virtualmachineinstances/filesystemlist',
  'virtualmachineinstances/userlist',
];
const VM_ACTIONS = [
  'virtualmachines/start',
  'virtualmachines/stop',
  'virtualmachines/restart',
  'virtualmachines/migrate',
  'virtualmachines/addvolume',
  'virtualmachines/removevolume',
  'virtualmachines/memorydump',
  'virtualmachines/removememorydump',
  'virtualmachines/evacuate/cancel',
];

function role(name: string, aggregateTo: string, rules: Array<Record<string, unknown>>): KubeObject {
  return {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: {
      name,
      labels: {
        ...componentLabels('rbac'),
        [`rbac.authorization.k8s.io/aggregate-to-${aggregateTo}`]: 'true',
      },
    },
    rules,
  } as KubeObject;
}

function userRules(write: boolean): Array<Record<string, unknown>> {
  const verbs = write ? WRITE : READ;
  const rules: Array<Record<string, unknown>> = [
    { apiGroups: ['subresources.kubevirt.io'], resources: VMI_READS, verbs: ['get'] },
    { apiGroups: ['kubevirt.io'], resources: WORKLOADS, verbs },
    {
      apiGroups: ['pool.kubevirt.io'],
      resources: ['virtualmachinepools', 'virtualmachinepools/scale'],
      verbs,
    },
    {
      apiGroups: ['snapshot.kubevirt.io'],
      resources: ['virtualmachinesnapshots', 'virtualmachinesnapshotcontents', 'virtualmachinerestores'],
      verbs,
    },
    { apiGroups: ['clone.kubevirt.io'], resources: ['virtualmachineclones'], verbs },
    { apiGroups: ['export.kubevirt.io'], resources: ['virtualmachineexports'], verbs },
    {
      apiGroups: ['instancetype.kubevirt.io'],
      resources: ['virtualmachineinstancetypes', 'virtualmachinepreferences'],
      verbs,
    },
    {
      apiGroups: ['instancetype.kubevirt.io'],
      resources: ['virtualmachineclusterinstancetypes', 'virtualmachineclusterpreferences'],
      verbs: READ,
    },
    { apiGroups: ['migrations.kubevirt.io'], resources: ['migrationpolicies'], verbs: READ },
    { apiGroups: ['kubevirt.io'], resources: ['kubevirts'], verbs: ['get', 'list'] },
  ];
  if (write) {
    rules.unshift(
      { apiGroups: ['subresources.kubevirt.io'], resources: VMI_ACTIONS, verbs: ['get', 'update'] },
      { apiGroups: ['subresources.kubevirt.io'], resources: VM_ACTIONS, verbs: ['update'] },
      // CDI's cdi.kubevirt.io:edit grants upload tokens (virtctl image-upload), which virt-api serves here.
      { apiGroups: ['upload.cdi.kubevirt.io'], resources: ['uploadtokenrequests'], verbs: ['create'] },
    );
  }
  return rules;
}

/** kubevirt.io:admin, kubevirt.io:edit, kubevirt.io:view. */
export function aggregatedRoleObjects(): KubeObject[] {
  return [
    role('kubevirt.io:admin', 'admin', userRules(true)),
    role('kubevirt.io:edit', 'edit', userRules(true)),
    role('kubevirt.io:view', 'view', userRules(false)),
  ];
}
