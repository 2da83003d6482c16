/**
 * raw better-sqlite3 (rawSqlite.ts) started by a bench on its own, without the peer bench's
 * process table: bench/transfer.ts measures its import, export and bulk in turn with Folio's.
 * Not through peerServers.ts, whose import of peers.ts would start the peer bench's modules.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { spawnListening, stopFolio } from '../../test/support/folioProcess.js';

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
  try {
    const server = await spawnListening(
      'raw better-sqlite3',
      ['--import', 'tsx', 'bench/workloads/rawSqlite.ts'],
      {
        ...env,
        RAW_DB_DIR: dir,
        RAW_EXPORT_DOCS: String(exportDocs),
      },
    );
    const stop = async () => {
      await stopFolio(server);
      await rm(dir, { recursive: true, force: true });
    };
    return { url: server.url, pid: server.child.pid, dir, stop };
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}
