/**
 * An SSE response read as raw text (no client library, no Authorization: a stream ticket's URL
 * works), and its document events parsed from it.
 */
import { expect } from 'chai';

/** The stream's text until `until` appears in it, or `waitMs` passed. */
export async function readSse(
  url: string,
  until: string,
  headers: Record<string, string> = {},
  waitMs = 5000,
): Promise<string> {
  const controller = new AbortController();
  const res = await fetch(url, {
    headers: { Accept: 'text/event-stream', ...headers },
    signal: controller.signal,
  });
  expect(res.status, await (res.status === 200 ? '' : res.text())).to.equal(200);
  let text = '';
  const decoder = new TextDecoder();
  const timer = setTimeout(() => controller.abort(), waitMs);
  try {
    for await (const chunk of res.body ?? []) {
      text += decoder.decode(chunk as Uint8Array);
      if (text.includes(until)) break;
    }
  } catch {
    // aborted: the caller's assertions say what was missing
  } finally {
    clearTimeout(timer);
    controller.abort();
  }
  return text;
}

/** The named events with data in `text`, in order: `{type, data}`. */
// biome-ignore lint/suspicious/noExplicitAny: event payloads are checked by assertions, not types
export function sseEvents(text: string): Array<{ type: string; data: any }> {
  const out = [];
  for (const block of text.split('\n\n')) {
    const lines = block.split('\n');
    const type = lines.find((l) => l.startsWith('event: '))?.slice(7);
    const data = lines.find((l) => l.startsWith('data: '))?.slice(6);
    if (type && data) out.push({ type, data: JSON.parse(data) });
  }
  return out;
}
