/**
 * User data on its way to a terminal: every CLI message that quotes a manifest value, a
 * name or an error from the cluster passes here.
 */
import { escapeUnsafeChars } from '../api/manifest/load';

/** The longest line of user data the CLI prints; longer text is cut with a count of what was left out. */
export const MAX_TERMINAL_LINE = 1000;

/**
 * `text` safe to print on one line: control characters (escape sequences, CR, LF), line
 * separators and bidirectional overrides are escaped as `\uXXXX`, so a value cannot forge
 * a progress line, move the cursor or read differently than it is; then it is cut to
 * `max` characters.
 */
export function terminalText(text: string, max = MAX_TERMINAL_LINE): string {
  const cut = text.length > max ? text.slice(0, max) : text;
  const escaped = escapeUnsafeChars(cut);
  return text.length > max ? `${escaped}... (${text.length - max} more characters)` : escaped;
}
