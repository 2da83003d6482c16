/**
 * Which browser origins may use a project's API keys (CORS on the data routes). A read-write key
 * is a secret: in a page, anyone who opens it can read the key. So by default browsers may use
 * read-only keys from any origin and read-write keys from none, the way Stripe keeps secret keys
 * out of browsers; a project can instead list the origins allowed to use any of its keys.
 */
import { z } from 'zod';
import { AppError } from '../errors.js';
import type { KeyScope } from '../store/port.js';

/** Most origins one project may list. */
export const MAX_ALLOWED_ORIGINS = 50;

/** `https://app.example` or `http://localhost:5173`: scheme, host and port only; or `*`. */
const originSchema = z
  .string()
  .max(256)
  .transform((text, ctx) => {
    if (text === '*') return text;
    let url: URL;
    try {
      url = new URL(text);
    } catch {
      ctx.addIssue({ code: 'custom', message: `"${text}" is not an origin such as https://app.example` });
      return z.NEVER;
    }
    const bare = url.pathname === '/' && !url.search && !url.hash && !url.username && !url.password;
    if ((url.protocol !== 'https:' && url.protocol !== 'http:') || !bare || text.endsWith('/')) {
      ctx.addIssue({
        code: 'custom',
        message: `"${text}" is not an origin: give scheme, host and port only, such as https://app.example`,
      });
      return z.NEVER;
    }
    return url.origin;
  });

/** `{allowedOrigins: [...] | null}`: null restores the default policy. */
export const allowedOriginsSchema = z.strictObject({
  allowedOrigins: z.array(originSchema).max(MAX_ALLOWED_ORIGINS).nullable(),
});

export type OriginDecision = { allowed: true } | { allowed: false; message: string };

/**
 * Whether a request from the page at `origin`, with a key of `scope`, may proceed. `ownOrigin`
 * is Folio's own (pages Folio serves itself are trusted); `allowed` is the project's list or null.
 */
export function decideOrigin(
  origin: string,
  ownOrigin: string,
  scope: KeyScope,
  allowed: string[] | null,
  projectId: string,
): OriginDecision {
  if (origin === ownOrigin) return { allowed: true };
  const howToAllow = `PATCH /api/projects/${projectId} with {"allowedOrigins":["${origin}"]}`;
  if (allowed !== null) {
    if (allowed.includes('*') || allowed.includes(origin)) return { allowed: true };
    return {
      allowed: false,
      message: `The origin ${origin} is not among this project's allowed origins; to allow it, ${howToAllow}.`,
    };
  }
  if (scope === 'read-only') return { allowed: true };
  return {
    allowed: false,
    message:
      `This is a read-write (secret) API key, which browser pages may not use: anyone who opens the page can read it. ` +
      `Use a read-only key in front-end code, or, if pages of ${origin} are trusted to write, ${howToAllow}.`,
  };
}

export const originNotAllowed = (message: string) => new AppError(403, 'origin_not_allowed', message);
