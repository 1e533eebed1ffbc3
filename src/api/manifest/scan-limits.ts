/**
 * The bounds checked on manifest text before anything is built: nodes (everything the
 * YAML parser allocates per token), documents and flow nesting, by one lexing pass.
 */
import { CST, Lexer } from 'yaml';

/** Default bound on YAML nodes in one input (see LoadOptions.maxNodes). */
export const DEFAULT_MAX_NODES = 100_000;
/** Default bound on YAML documents in one input (see LoadOptions.maxDocuments). */
export const DEFAULT_MAX_DOCUMENTS = 10_000;

/** Tokens that each build something the parser keeps: a node, a pair, an anchor, a comment. */
const COUNTED_TOKENS = new Set([
  'scalar',
  'single-quoted-scalar',
  'double-quoted-scalar',
  'block-scalar-header',
  'flow-map-start',
  'flow-seq-start',
  'seq-item-ind',
  'alias',
  'explicit-key-ind',
  'anchor',
  'tag',
  'comment',
  'directive-line',
]);
/** Tokens after which a `:` separates a key from its value (the key was counted already). */
const KEY_ENDS = new Set([
  'scalar',
  'single-quoted-scalar',
  'double-quoted-scalar',
  'alias',
  'flow-map-end',
  'flow-seq-end',
]);

/** The bounds {@link scanLimits} checks. */
export type ScanLimits = { maxNodes: number; maxDocuments: number; maxFlowDepth: number };

/**
 * Checks `text` against `limits` with the YAML lexer alone (linear, nothing kept), stopping
 * at the first bound passed. Everything the parser allocates per token counts as a node:
 * values, collections, sequence items, aliases (each is a node before it is expanded),
 * explicit `?` keys and bare `:` keys, anchors, tags and comments; an implicit null value
 * is not counted (it builds no node). `---`/`...` markers count as documents (each is a
 * Document with its own maps), and flow brackets as depth (the composer recurses on them).
 */
export function scanLimits(text: string, limits: ScanLimits): string | undefined {
  let nodes = 0;
  let documents = 1;
  let flowDepth = 0;
  let prev = '';
  for (const tok of new Lexer().lex(text)) {
    const type = CST.tokenType(tok);
    if (!type || type === 'space') continue;
    if (COUNTED_TOKENS.has(type) || (type === 'map-value-ind' && !KEY_ENDS.has(prev))) {
      if (++nodes > limits.maxNodes) {
        return `input has more than ${limits.maxNodes} YAML nodes (values, lists, maps, aliases, keys, anchors, tags and comments), over the limit`;
      }
    } else if (type === 'doc-start' || type === 'doc-end') {
      if (++documents > limits.maxDocuments) {
        return `input has more than ${limits.maxDocuments} YAML documents, over the limit`;
      }
    }
    if (type === 'flow-map-start' || type === 'flow-seq-start') {
      if (++flowDepth > limits.maxFlowDepth) {
        return `input nests flow collections more than ${limits.maxFlowDepth} levels deep, over the limit`;
      }
    } else if (type === 'flow-map-end' || type === 'flow-seq-end') flowDepth--;
    prev = type;
  }
  return undefined;
}
