/** CDI's importer worker: what runs in an importer pod (`kubevirt-ts cdi-importer`). */
export * from './import-request';
export { FatalImportError, type ImportOutcome, type ImportPaths, runImport } from './importer';
export * from './termination';
