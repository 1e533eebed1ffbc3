/** Public entry of `kubevirt-ts/controllers`. */
export * from './runtime';
