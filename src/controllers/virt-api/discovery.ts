/**
 * Discovery of the aggregated `subresources.kubevirt.io` API: the group, the resource
 * list of v1 (the subresources this virt-api serves, with their verbs), version and
 * health. kubectl, the aggregator and UIs read these.
 */

/** The API group. */
export const SUBRESOURCE_GROUP = 'subresources.kubevirt.io';
/** Versions served; v1alpha3 is upstream's older alias with the same paths. */
export const SUBRESOURCE_VERSIONS = ['v1', 'v1alpha3'] as const;

/** Served subresources: name as discovery lists it, and its verbs. */
export const Subresources: ReadonlyArray<{ name: string; verbs: string[] }> = [
  { name: 'expand-vm-spec', verbs: ['update'] },
  { name: 'virtualmachineinstances/console', verbs: ['get'] },
  { name: 'virtualmachineinstances/vnc', verbs: ['get'] },
  { name: 'virtualmachineinstances/vnc/screenshot', verbs: ['get'] },
  { name: 'virtualmachineinstances/portforward', verbs: ['get'] },
  { name: 'virtualmachineinstances/pause', verbs: ['update'] },
  { name: 'virtualmachineinstances/unpause', verbs: ['update'] },
  { name: 'virtualmachineinstances/softreboot', verbs: ['update'] },
  { name: 'virtualmachineinstances/reset', verbs: ['update'] },
  { name: 'virtualmachineinstances/freeze', verbs: ['update'] },
  { name: 'virtualmachineinstances/unfreeze', verbs: ['update'] },
  { name: 'virtualmachineinstances/guestosinfo', verbs: ['get'] },
  { name: 'virtualmachineinstances/userlist', verbs: ['get'] },
  { name: 'virtualmachineinstances/filesystemlist', verbs: ['get'] },
  { name: 'virtualmachineinstances/sev/fetchcertchain', verbs: ['get'] },
  { name: 'virtualmachineinstances/sev/querylaunchmeasurement', verbs: ['get'] },
  { name: 'virtualmachineinstances/sev/setupsession', verbs: ['update'] },
  { name: 'virtualmachineinstances/sev/injectlaunchsecret', verbs: ['update'] },
  { name: 'virtualmachines/start', verbs: ['update'] },
  { name: 'virtualmachines/stop', verbs: ['update'] },
  { name: 'virtualmachines/restart', verbs: ['update'] },
  { name: 'virtualmachines/migrate', verbs: ['update'] },
  { name: 'virtualmachines/expand-spec', verbs: ['get'] },
  { name: 'virtualmachines/addvolume', verbs: ['update'] },
  { name: 'virtualmachines/removevolume', verbs: ['update'] },
  { name: 'virtualmachines/memorydump', verbs: ['update'] },
  { name: 'virtualmachines/removememorydump', verbs: ['update'] },
  { name: 'virtualmachineinstances/addvolume', verbs: ['update'] },
  { name: 'virtualmachineinstances/removevolume', verbs: ['update'] },
  { name: 'virtualmachines/evacuate/cancel', verbs: ['update'] },
  { name: 'virtualmachineinstances/evacuate/cancel', verbs: ['update'] },
  { name: 'virtualmachines/objectgraph', verbs: ['get'] },
  { name: 'virtualmachineinstances/objectgraph', verbs: ['get'] },
];

/** `GET /apis/subresources.kubevirt.io/{version}`. */
export function apiResourceList(version: string): Record<string, unknown> {
  return {
    kind: 'APIResourceList',
    apiVersion: 'v1',
    groupVersion: `${SUBRESOURCE_GROUP}/${version}`,
    resources: Subresources.map((s) => ({
      name: s.name,
      singularName: '',
      namespaced: true,
      kind: '',
      verbs: s.verbs,
    })),
  };
}

/** `GET /apis/subresources.kubevirt.io`. */
export function apiGroup(): Record<string, unknown> {
  const versions = SUBRESOURCE_VERSIONS.map((v) => ({
    groupVersion: `${SUBRESOURCE_GROUP}/${v}`,
    version: v,
  }));
  return {
    kind: 'APIGroup',
    apiVersion: 'v1',
    name: SUBRESOURCE_GROUP,
    versions,
    preferredVersion: versions[0],
  };
}

/** `GET /apis`: the group list an aggregated server answers for its own groups. */
export function apiGroupList(): Record<string, unknown> {
  return { kind: 'APIGroupList', apiVersion: 'v1', groups: [apiGroup()] };
}

/** `GET .../version`: upstream's version.Info shape. */
export function versionInfo(gitVersion: string): Record<string, string> {
  return {
    gitVersion,
    gitCommit: '',
    gitTreeState: '',
    buildDate: '',
    goVersion: '',
    compiler: 'kubevirt-ts',
    platform: `${process.platform}/${process.arch === 'x64' ? 'amd64' : process.arch}`,
    nodeVersion: process.version,
  };
}
