/** CDI's importer worker: what runs in an importer pod (`kubevirt-ts cdi-importer`). */
export * from '../common/cdi-import-request';
export * from '../common/cdi-import-termination';
export { FatalImportError, type ImportOutcome, type ImportPaths, runImport } from './importer';
export { secretHeaderLines } from './secret-headers';
