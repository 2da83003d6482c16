/** Text handed to a streaming reader in pieces, and what the reader yields gathered. */

/** `text` in pieces of `size` characters, as a stream would deliver it. */
export async function* chunks(text: string, size: number): AsyncGenerator<string> {
  for (let i = 0; i < text.length; i += size) yield text.slice(i, i + size);
}

export async function collect<T>(it: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of it) out.push(item);
  return out;
}
