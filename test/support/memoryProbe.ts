/**
 * What a `folio serve` process holds, asked from outside. Started with MEMORY_PROBE_NODE_ARGS and
 * memoryProbeEnv(file), the server runs a full garbage collection on SIGUSR2 and writes
 * process.memoryUsage() to `file` (memoryProbe.cjs): a test reads what the server keeps, not how
 * long V8 happened to leave its garbage about, which swings heap and resident size by ±100 MiB
 * between identical runs. The collection pauses the server for milliseconds (a heap snapshot,
 * the other way to force one from outside, writes the whole heap to disk and pauses it for
 * seconds).
 */
import type { ChildProcess } from 'node:child_process';
import { readFile, rm, stat } from 'node:fs/promises';

/** Node options for the server (`--expose-gc` lets the probe collect; paths from the repository root). */
export const MEMORY_PROBE_NODE_ARGS = ['--expose-gc', '--require', './test/support/memoryProbe.cjs'];

/** The environment that names the probe's answer file. */
export function memoryProbeEnv(file: string): Record<string, string> {
  return { MEMORY_PROBE_FILE: file };
}

/** Signal the server's probe and read its answer: what it holds after a full collection. */
export async function probeMemory(child: ChildProcess, file: string): Promise<NodeJS.MemoryUsage> {
  await rm(file, { force: true });
  child.kill('SIGUSR2');
  const deadline = Date.now() + 10_000;
  // The probe renames its answer into place: once the file is there, it is whole.
  while (!(await stat(file).catch(() => null))) {
    if (Date.now() > deadline) throw new Error('the memory probe did not answer within 10 s');
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  return JSON.parse(await readFile(file, 'utf8')) as NodeJS.MemoryUsage;
}
