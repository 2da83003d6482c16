/**
 * An SSE response read as raw text (no client library, no Authorization: a stream ticket's URL
 * works), and its document events parsed from it.
 */
import { expect } from 'chai';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A raw SSE response read as text, for the frames themselves. */
export class RawStream {
  readonly status: number;
  text = '';
  readonly #controller: AbortController;
  readonly #done: Promise<void>;

  private constructor(response: Response, controller: AbortController) {
    this.status = response.status;
    this.#controller = controller;
    const decoder = new TextDecoder();
    this.#done = (async () => {
      try {
        for await (const chunk of response.body ?? []) this.text += decoder.decode(chunk as Uint8Array);
      } catch {
        // aborted or cut
      }
    })();
  }

  static async open(url: string, headers: Record<string, string>): Promise<RawStream> {
    const controller = new AbortController();
    const response = await fetch(url, {
      headers: { Accept: 'text/event-stream', ...headers },
      signal: controller.signal,
    });
    return new RawStream(response, controller);
  }

  /** Waits until the text so far matches. */
  async until(pattern: RegExp, waitMs = 5000): Promise<RegExpMatchArray> {
    const deadline = Date.now() + waitMs;
    while (true) {
      const match = pattern.exec(this.text);
      if (match) return match;
      if (Date.now() > deadline)
        throw new Error(`timed out waiting for ${pattern} in ${JSON.stringify(this.text)}`);
      await sleep(20);
    }
  }

  /** Document ids received, in order. */
  get documentIds(): string[] {
    return [...this.text.matchAll(/"document":\{"_id":"([^"]+)"/g)].map((m) => m[1]!);
  }

  async ended(): Promise<void> {
    await this.#done;
  }

  close(): void {
    this.#controller.abort();
  }
}

/** The stream's text once `until` appears in it, or `waitMs` passed (the caller's assertions say what was missing). */
export async function readSse(
  url: string,
  until: string,
  headers: Record<string, string> = {},
  waitMs = 5000,
): Promise<string> {
  const stream = await RawStream.open(url, headers);
  if (stream.status !== 200) {
    await stream.ended();
    expect(stream.status, stream.text).to.equal(200);
  }
  await stream.until(new RegExp(until.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')), waitMs).catch(() => {});
  stream.close();
  return stream.text;
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
