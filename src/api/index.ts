/** Public entry of `kubevirt-ts/api`. */

export * from './config';
export * from './defaults';
export * from './errors';
export { type ApiSchemaNode, apiSchemas, apiTypeNames } from './generated/schemas';
export type * from './generated/types';
export * from './groups';
export * from './instancetype';
export * from './labels';
export * from './manifest';
export * from './validation';
