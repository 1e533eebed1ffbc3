/**
 * The web console's access control. `kubevirt-ts ui` prints a URL carrying a random
 * session token; the first request with it gets the token as an HttpOnly, SameSite=Strict
 * cookie (and a redirect that drops it from the address bar), and every later request and
 * websocket must carry the cookie. Because the server acts with the user's credentials, it
 * also refuses what a hostile page could make a browser send: a Host that is not the
 * server's own (DNS rebinding), and a state-changing request or websocket whose Origin is
 * another site's (CSRF; GETs change nothing).
 */
import { randomBytes, timingSafeEqual } from 'node:crypto';
import type http from 'node:http';

/** The cookie's name. */
export const SESSION_COOKIE = 'kvts_ui_session';

/** Why a request was refused, or undefined when it may proceed. */
export type Refusal = { code: 401 | 403; message: string } | undefined;

/** One server's session: its token and the host names it answers to. */
export class UiSession {
  /** 32 random bytes, URL-safe. */
  readonly token = randomBytes(32).toString('base64url');
  private readonly hosts: Set<string>;

  /**
   * `hosts`: the `host:port` values the server is reached by (the Host header); `secure`:
   * it serves HTTPS (the cookie is then `Secure` and origins `https:`).
   */
  constructor(
    hosts: string[],
    private readonly secure = false,
  ) {
    this.hosts = new Set(hosts.map((h) => h.toLowerCase()));
  }

  /** True when `candidate` is this session's token (constant-time). */
  matches(candidate: string | undefined): boolean {
    if (!candidate) return false;
    const a = Buffer.from(candidate);
    const b = Buffer.from(this.token);
    return a.length === b.length && timingSafeEqual(a, b);
  }

  /** The Set-Cookie value that starts the session. */
  cookie(): string {
    return `${SESSION_COOKIE}=${this.token}; HttpOnly; SameSite=Strict; Path=/${this.secure ? '; Secure' : ''}`;
  }

  /**
   * Checks a request: Host is the server's, the cookie holds the token, and a request that
   * is not a GET/HEAD, or is a websocket, comes from the server's own origin.
   */
  check(req: http.IncomingMessage, opts: { stateChanging: boolean }): Refusal {
    const host = (req.headers.host ?? '').toLowerCase();
    if (!this.hosts.has(host))
      return { code: 403, message: `host ${JSON.stringify(host)} is not this server` };
    if (!this.matches(cookieValue(req.headers.cookie, SESSION_COOKIE))) {
      return { code: 401, message: 'no session: open the URL that `kubevirt-ts ui` printed' };
    }
    if (opts.stateChanging) {
      const origin = req.headers.origin;
      if (origin !== `${this.secure ? 'https' : 'http'}://${host}`) {
        return { code: 403, message: `origin ${JSON.stringify(origin ?? '')} may not change anything here` };
      }
    }
    return undefined;
  }
}

/** The value of cookie `name` in a Cookie header. */
export function cookieValue(header: string | undefined, name: string): string | undefined {
  for (const part of (header ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i > 0 && part.slice(0, i).trim() === name) return part.slice(i + 1).trim();
  }
  return undefined;
}
