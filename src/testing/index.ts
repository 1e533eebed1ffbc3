/**
 * Public entry of `kubevirt-ts/testing`: the driver conformance suite and the fake
 * driver. The suite registers vitest `describe`/`it` blocks, so this entry imports
 * `vitest`: use it from test files only, with vitest installed as a dev dependency.
 */
export * from '../drivers/conformance/index';
export { FakeDriver, type FakeDriverOptions, FakeHost, type FakeOperation } from '../drivers/fake/index';
