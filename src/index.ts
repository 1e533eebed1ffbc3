/**
 * kubevirt-ts: KubeVirt's `kubevirt.io/v1` API, converter, drivers and reconcile
 * primitives. The root entry re-exports the API layer only; import the heavier layers
 * through their subpaths (`kubevirt-ts/converter`, `kubevirt-ts/drivers`,
 * `kubevirt-ts/controllers`, `kubevirt-ts/testing`) so unused ones are never loaded.
 */
export * from './api/index';
