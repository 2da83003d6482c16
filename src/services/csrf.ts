/**
 * Cross-site request forgery: a page of another site can make the browser send Folio's session
 * cookie with a form post. SameSite=Lax already keeps the cookie off cross-site posts in current
 * browsers; this is the second lock, for same-site neighbours (another subdomain) and older
 * browsers. A state-changing request authenticated by the cookie must carry `X-CSRF-Token`,
 * which is derived from the session token, so only a page that can read Folio's own responses
 * (`GET /api/auth/session`) can know it, and must not come from another origin.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { AppError } from '../errors.js';

export const CSRF_HEADER = 'X-CSRF-Token';

/** Methods that change nothing, so need no token. */
export const SAFE_METHODS: ReadonlySet<string> = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The session's CSRF token: a keyed hash of the session token (nothing stored; one-way). */
export function csrfTokenFor(sessionToken: string): string {
  return createHmac('sha256', sessionToken).update('folio-csrf-v1').digest('base64url');
}

export type CsrfDecision = { ok: true } | { ok: false; message: string };

/**
 * Whether a cookie-authenticated, state-changing request may proceed. `origin` is the request's
 * `Origin` header (absent from some same-origin requests), `ownOrigin` Folio's.
 */
export function decideCsrf(input: {
  sessionToken: string;
  presented: string | undefined;
  origin: string | undefined;
  ownOrigin: string;
}): CsrfDecision {
  if (input.origin && input.origin !== input.ownOrigin) {
    return {
      ok: false,
      message: `A request from ${input.origin} may not use Folio's session cookie to change anything.`,
    };
  }
  const expected = Buffer.from(csrfTokenFor(input.sessionToken));
  const presented = Buffer.from(input.presented ?? '');
  if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) {
    return {
      ok: false,
      message:
        `A request authenticated by the session cookie that changes state must send ${CSRF_HEADER} ` +
        '(csrfToken from GET /api/auth/session); scripts can send Authorization: Bearer <session> instead.',
    };
  }
  return { ok: true };
}

export const csrfFailed = (message: string) => new AppError(403, 'csrf_failed', message);
