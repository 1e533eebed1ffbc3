/** Manifest loading: YAML/JSON text into typed, checked API objects. */
export {
  checkFields,
  describeValue,
  type FieldProblem,
  type FieldProblemCode,
  type FieldSegments,
  formatFieldPath,
} from './field-check';
export {
  escapeUnsafeChars,
  isKubernetesBuiltinGroup,
  type LoadedForeignObject,
  type LoadedKnownObject,
  type LoadedObject,
  type LoadOptions,
  type LoadResult,
  loadManifestFile,
  loadManifests,
  type ManifestIssue,
  type ManifestIssueCode,
  type ManifestSource,
  objectsOfKind,
} from './load';
