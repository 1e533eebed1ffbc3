/** Manifest issues and their formatting: every string in one is made safe to print. */
import type { ManifestIssue } from './manifest-types';

/** A value safe to print inside a message (quotes, escapes control characters, truncates). */
export function quote(v: string): string {
  const text = JSON.stringify(v);
  return text.length > 80 ? `${text.slice(0, 77)}..."` : text;
}

function formatMessage(i: Omit<ManifestIssue, 'message'>): string {
  const pos = i.line ? `:${i.line}${i.column ? `:${i.column}` : ''}` : '';
  const obj = i.kind ? ` (${i.kind}${i.name !== undefined ? `/${i.name}` : ''})` : '';
  const where = i.document > 0 ? ` document ${i.document}${obj}:` : '';
  const path = i.path ? ` ${i.path}:` : '';
  return `${i.filename}${pos}:${where}${path} ${i.detail}`;
}

/**
 * Characters that must not reach a terminal or log raw: C0/C1 controls, DEL, line and
 * paragraph separators, and bidirectional overrides (which can make text read differently
 * than it is). JSON.stringify leaves all but C0 alone, so every issue string passes here.
 */
// biome-ignore lint/suspicious/noControlCharactersInRegex: matching control characters is the point
const UNSAFE_CHARS = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g;

/** Replaces unsafe characters with `\uXXXX` escapes. */
export function escapeUnsafeChars(text: string): string {
  return text.replace(UNSAFE_CHARS, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

export function issue(raw: Omit<ManifestIssue, 'message'>): ManifestIssue {
  const i = { ...raw };
  for (const k of ['filename', 'kind', 'name', 'path', 'detail'] as const) {
    const v = i[k];
    if (typeof v === 'string') i[k] = escapeUnsafeChars(v);
  }
  return { ...i, message: formatMessage(i) };
}

/** File names reach terminal output: escape control characters. */
export function sanitizeFilename(name: string): string {
  // Quoted when odd, so the escapes read as such; issue() escapes what JSON leaves raw.
  return escapeUnsafeChars(name) !== name ? JSON.stringify(name) : name;
}
