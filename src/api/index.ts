/** Public entry of `kubevirt-ts/api`. */

export { type ApiSchemaNode, apiSchemas, apiTypeNames } from './generated/schemas';
export type * from './generated/types';
export * from './groups';
export * from './manifest';
