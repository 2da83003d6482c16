/**
 * The CLI's HTTP calls: fetch with the API key, and 429s waited out as the server's
 * Retry-After says (a refused request changed nothing, so sending it again is safe).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { CommandFailure, type Connection } from './options.js';

/** Never wait longer than this for one Retry-After, whatever the server says. */
const MAX_RETRY_AFTER_S = 60;
/** Give up after this many 429s in a row for one request. */
const MAX_RATE_LIMITED = 100;

export interface ApiError {
  code: string;
  message: string;
  details?: Record<string, unknown>;
}

export async function send(
  conn: Connection,
  path: string,
  init: { method?: string; headers?: Record<string, string>; body?: string },
  onWait?: (seconds: number) => void,
): Promise<Response> {
  for (let attempt = 1; ; attempt++) {
    let res: Response;
    try {
      res = await fetch(`${conn.url}${path}`, {
        ...init,
        headers: { ...init.headers, Authorization: `Bearer ${conn.key}` },
      });
    } catch (error) {
      const cause = (error as { cause?: { code?: string } }).cause?.code;
      throw new CommandFailure(`cannot reach ${conn.url}${cause ? ` (${cause})` : ''}`);
    }
    if (res.status !== 429 || attempt >= MAX_RATE_LIMITED) return res;
    await res.arrayBuffer();
    const seconds = Math.min(MAX_RETRY_AFTER_S, Math.max(0, Number(res.headers.get('retry-after')) || 1));
    onWait?.(seconds);
    await sleep(seconds * 1000);
  }
}

/** The `{error}` body of a refused request (or a stand-in when the body is not Folio's). */
export async function apiError(res: Response): Promise<ApiError> {
  const text = await res.text();
  try {
    const body = JSON.parse(text) as { error?: ApiError };
    if (body.error?.code) return body.error;
  } catch {
    // Not JSON: a proxy's page, say.
  }
  return { code: `http_${res.status}`, message: text.slice(0, 200) || res.statusText };
}
