/** The public types of manifest loading: issues, loaded objects, results and options. */
import type { KindInfo, KnownKind, KnownKinds } from '../groups';
import type { FieldProblemCode } from './field-check';

/** What kind of problem an issue reports. */
export type ManifestIssueCode =
  | FieldProblemCode
  | 'io'
  | 'too-large'
  | 'syntax'
  | 'not-an-object'
  | 'missing-type-meta'
  | 'unknown-kind'
  | 'converted-version'
  | 'foreign-kind';

/** One error or warning about a manifest. */
export interface ManifestIssue {
  severity: 'error' | 'warning';
  code: ManifestIssueCode;
  filename: string;
  /** 1-based index of the document in the file (JSON lists count their items). */
  document: number;
  /** 1-based position of the offending node, when known. */
  line?: number;
  column?: number;
  kind?: string;
  name?: string;
  /** Field path inside the object, e.g. `spec.template.spec.domain.devices.disks[0].name`. */
  path?: string;
  /** The problem alone, e.g. `unknown field`. */
  detail: string;
  /** Ready to print: `file:line:col: document N (Kind/name): path: detail`. */
  message: string;
}

/** Where a loaded object came from. */
export interface ManifestSource {
  filename: string;
  document: number;
  line: number;
  column: number;
}

/** A loaded object of a kind the project knows, typed by its kind. */
export type LoadedKnownObject = {
  [K in KnownKind]: {
    known: true;
    kind: K;
    /** The apiVersion after conversion (the kind's schema version). */
    apiVersion: string;
    /** The apiVersion as written in the manifest. */
    originalApiVersion: string;
    info: KindInfo;
    object: KnownKinds[K];
    source: ManifestSource;
  };
}[KnownKind];

/** A Kubernetes built-in object (e.g. a PriorityClass) passed through without schema checks. */
export interface LoadedForeignObject {
  known: false;
  kind: string;
  apiVersion: string;
  originalApiVersion: string;
  info?: undefined;
  object: Record<string, unknown>;
  source: ManifestSource;
}

/** A loaded object: of a known kind (typed, `known: true`) or a foreign one passed through. */
export type LoadedObject = LoadedKnownObject | LoadedForeignObject;

/** The result of loading: objects without errors, and every issue found. */
export interface LoadResult {
  objects: LoadedObject[];
  warnings: ManifestIssue[];
  errors: ManifestIssue[];
}

/** Options of `loadManifests`/`loadManifestFile`: limits on the input, and which groups pass unchecked. */
export interface LoadOptions {
  /** Name used in messages; default `<input>`. */
  filename?: string;
  /** Reject larger input outright (default 16 MiB). */
  maxBytes?: number;
  /**
   * Reject input with more YAML nodes (scalars, collections, items, aliases, keys, anchors,
   * tags and comments; counted by a lexing pass before anything is built) than this
   * (default 100,000), or that decodes to more values once aliases are expanded: the parsed
   * document costs about 1 KB per node, so bytes alone do not bound memory.
   */
  maxNodes?: number;
  /** Reject input with more YAML documents (`---`/`...` markers) than this (default 10,000). */
  maxDocuments?: number;
  /**
   * API groups passed through unchecked as foreign objects. Default: Kubernetes built-in
   * groups (core `v1`, `apps`, `batch`, `policy`, `autoscaling`, `*.k8s.io`).
   */
  isForeignGroup?: (group: string) => boolean;
}
