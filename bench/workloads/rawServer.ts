/**
 * raw better-sqlite3 (rawSqlite.ts) started by a bench on its own, without the peer bench's
 * process table: bench/transfer.ts measures its import, export and bulk in turn with Folio's.
 * Not through peerServers.ts, whose import of peers.ts would start the peer bench's modules.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

export interface RawAlone {
  url: string;
  pid: number | undefined;
  /** Its data directory (the database is raw.db). */
  dir: string;
  stop(): Promise<void>;
}

/**
 * The server on a fresh data directory, with `exportDocs` rows in its export table; `env`:
 * more of its settings (RAW_ITEMS, PEERS_BIG_DOCS: a test seeds few rows).
 */
export async function startRawAlone(exportDocs: number, env: Record<string, string> = {}): Promise<RawAlone> {
  const dir = await mkdtemp(join(tmpdir(), 'folio-bench-raw-'));
  const child = spawn(process.execPath, ['--import', 'tsx', 'bench/workloads/rawSqlite.ts'], {
    env: { ...process.env, ...env, RAW_DB_DIR: dir, RAW_EXPORT_DOCS: String(exportDocs) },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const exited = once(child, 'exit');
  const stop = async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM');
      await exited;
    }
    await rm(dir, { recursive: true, force: true });
  };
  try {
    let output = '';
    const url = await new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (chunk) => {
        output += String(chunk);
        const found = /listening on (\S+)/.exec(output)?.[1];
        if (found) resolve(found);
      });
      void exited.then(() => reject(new Error(`raw better-sqlite3 exited: ${output}`)));
    });
    return { url, pid: child.pid, dir, stop };
  } catch (error) {
    await stop();
    throw error;
  }
}
