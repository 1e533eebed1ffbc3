/** Public entry of `kubevirt-ts/drivers`. */
export * from './driver';
export * from './errors';
export * from './event-hub';
export * from './fake/index';
export * from './plugin';
export * from './registry';
