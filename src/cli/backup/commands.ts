/**
 * `folio backup`, `folio restore` and `folio migrate`: a whole deployment written to one file
 * (format.ts), read back into an empty store, or copied store to store. Each works through the
 * storage port's SnapshotRepository, so any store kind goes to any other. docs/operations.md
 * says how to use them and what they guarantee.
 */
import { createHash } from 'node:crypto';
import { existsSync } from 'node:fs';
import { mkdir, readFile, rename, rm, rmdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { type ParseArgsConfig, parseArgs } from 'node:util';
import cliProgress from 'cli-progress';
import { loadConfig } from '../../config/load.js';
import type { Config } from '../../config/schema.js';
import { DATABASE_FILE } from '../../store/embedded/index.js';
import { openStore } from '../../store/open.js';
import { SnapshotLostError, type Store } from '../../store/port.js';
import { CommandFailure, UsageError } from '../transfer/options.js';
import { summaryLine } from '../transfer/progress.js';
import { copyInto, DEFAULT_BATCH_SIZE, notEmptyMessage, restoreEmbedded } from './copy.js';
import { BackupFileError, type BackupTrailer, type VerifiedBackup, verifyBackup } from './format.js';
import { type WriteBackupOptions, writeBackup } from './writer.js';

export const BACKUP_HELP = `Usage: folio backup --out FILE [--gzip]

Writes every account, project, key (hashes), webhook (secrets sealed as stored), setting,
document, version and index definition of the store the environment selects (FOLIO_DATA_DIR,
MONGODB_URI, ...) to FILE, as they were at one point in time. The server may keep running and
writing. The file is NDJSON with a checksum (docs/operations.md); it holds password and key
hashes and the webhook sealing key: keep it as safe as the data itself.

Options:
  --out FILE     where to write (must not exist yet)
  --gzip         compress (also when FILE ends in .gz)
`;

export const RESTORE_HELP = `Usage: folio restore FILE [--batch-size N]

Checks the whole backup FILE (format, every record, checksum) and then writes it into the store
the environment selects, which must be empty; no Folio may run on it meanwhile. A damaged or
truncated file is refused before anything is written. On the embedded store the restore is all
or nothing; on MongoDB, see docs/operations.md.

Options:
  --batch-size N   records per write (default ${DEFAULT_BATCH_SIZE})
`;

export const MIGRATE_HELP = `Usage: folio migrate --to MONGODB_URI|DATA_DIR [--work DIR] [--batch-size N]

Copies the whole store the environment selects (FOLIO_DATA_DIR, MONGODB_URI, ...) into another,
empty store: a MongoDB deployment (a mongodb:// or mongodb+srv:// URI; FOLIO_MONGODB_DB_PREFIX
names its databases) or an embedded data directory. It first takes a snapshot of the source
into DIR, then copies it in batches, recording its progress in DIR: if interrupted, run the same
command again and it resumes where it stopped. The copy is the source as it was when the
snapshot was taken: stop writes first for a cut-over (docs/operations.md).

Options:
  --to TARGET      the store to copy into
  --work DIR       where the snapshot and the progress are kept (default ./folio-migrate)
  --batch-size N   records per write (default ${DEFAULT_BATCH_SIZE})
`;

/** parseArgs, with its mistakes (an unknown flag, a missing value) as usage errors. */
function parse<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

function batchSizeOf(value: string | undefined): number {
  if (value === undefined) return DEFAULT_BATCH_SIZE;
  const n = Number(value);
  if (!Number.isInteger(n) || n < 1 || n > 100_000) throw new UsageError('--batch-size must be 1 to 100000');
  return n;
}

function interactive(): boolean {
  return process.stderr.isTTY === true;
}

/** A bar over records (restore, migrate), on a terminal only. */
function recordBar(label: string, total: number, start: number) {
  if (!interactive()) return { update(_n: number) {}, stop() {} };
  const bar = new cliProgress.SingleBar(
    {
      format: `${label} |{bar}| {percentage}% | {value}/{total} records | ETA {eta_formatted}`,
      stream: process.stderr,
      hideCursor: true,
      etaBuffer: 50,
      fps: 10,
    },
    cliProgress.Presets.shades_classic,
  );
  bar.start(Math.max(total, 1), start);
  return {
    update: (n: number) => bar.update(n),
    stop: () => bar.stop(),
  };
}

/** A running count while a snapshot is read (its size is unknown until the end), on a terminal only. */
function countBar(label: string) {
  if (!interactive()) return { update(_n: number) {}, stop() {} };
  const bar = new cliProgress.SingleBar(
    {
      format: `${label} {value} records | {duration_formatted}`,
      stream: process.stderr,
      hideCursor: true,
      fps: 5,
    },
    cliProgress.Presets.shades_classic,
  );
  bar.start(0, 0);
  return {
    update: (n: number) => {
      if (n % 1000 === 0) bar.update(n);
    },
    stop: () => bar.stop(),
  };
}

/** Snapshot attempts when the store says a new read may succeed (SnapshotLostError.retryable). */
const SNAPSHOT_ATTEMPTS = 3;

/** Write a snapshot of `store` to `file`, reading again when the store lost the snapshot's point in time. */
async function snapshotTo(store: Store, file: string, options: WriteBackupOptions): Promise<BackupTrailer> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await writeBackup(store.snapshots.read(), file, options);
    } catch (error) {
      if (!(error instanceof SnapshotLostError)) throw error;
      if (!error.retryable || attempt >= SNAPSHOT_ATTEMPTS) {
        throw new CommandFailure(`the snapshot failed: ${error.message}`);
      }
      process.stderr.write(`The snapshot was interrupted (${error.message}); reading it again.\n`);
    }
  }
}

/** Refuse to read an embedded store that is not there (a mistyped FOLIO_DATA_DIR would back up nothing). */
function assertSourceExists(config: Config): void {
  if (storeKind(config) !== 'embedded') return;
  if (!existsSync(path.join(config.dataDir, DATABASE_FILE))) {
    throw new CommandFailure(
      `no Folio data in ${path.resolve(config.dataDir)} (FOLIO_DATA_DIR): nothing to copy`,
    );
  }
}

/** A file the commands cannot use: why, and that nothing was written. */
async function verified(file: string): Promise<VerifiedBackup> {
  if (!existsSync(file)) throw new CommandFailure(`cannot restore ${file}: no such file`);
  try {
    return await verifyBackup(file);
  } catch (error) {
    if (error instanceof BackupFileError) {
      throw new CommandFailure(`cannot restore ${file}: ${error.message}; nothing was written`);
    }
    throw error;
  }
}

function describeCounts(counts: Record<string, number | undefined>): string {
  return Object.entries(counts)
    .map(([type, n]) => `${n} ${type}${n === 1 ? '' : 's'}`)
    .join(', ');
}

export async function backupCommand(args: string[]): Promise<number> {
  const { values } = parse({
    args,
    options: { out: { type: 'string' }, gzip: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help) {
    process.stdout.write(BACKUP_HELP);
    return 0;
  }
  const out = values.out;
  if (!out) throw new UsageError('--out FILE is required');
  if (existsSync(out)) throw new UsageError(`${out} exists: choose another name (a backup never overwrites)`);
  const config = loadConfig();
  assertSourceExists(config);
  // No data-directory lock: the backup reads beside a running server.
  const opened = await openStore(config, { lockDataDir: false });
  const bar = countBar('backup');
  try {
    const trailer = await snapshotTo(opened.store, out, {
      source: opened.store.kind,
      gzip: values.gzip === true || out.endsWith('.gz'),
      onRecord: (n) => bar.update(n),
    });
    bar.stop();
    const summary = { file: out, records: trailer.records, counts: trailer.counts, sha256: trailer.sha256 };
    process.stdout.write(
      summaryLine(
        summary,
        interactive(),
        `Backup of ${opened.description} written to ${out}: ${describeCounts(trailer.counts) || 'no records'}.`,
      ),
    );
    return 0;
  } finally {
    bar.stop();
    await opened.stop();
  }
}

export async function restoreCommand(args: string[]): Promise<number> {
  const { values, positionals } = parse({
    args,
    allowPositionals: true,
    options: { 'batch-size': { type: 'string' }, help: { type: 'boolean', short: 'h' } },
  });
  if (values.help) {
    process.stdout.write(RESTORE_HELP);
    return 0;
  }
  if (positionals.length !== 1) throw new UsageError('give one backup FILE to restore');
  const file = positionals[0]!;
  const batchSize = batchSizeOf(values['batch-size']);
  const backup = await verified(file);
  const config = loadConfig();
  const total = backup.trailer.records;
  const bar = recordBar('restore', total, 0);
  let written: number;
  let description: string;
  try {
    if (storeKind(config) === 'embedded') {
      description = `embedded store in ${config.dataDir}`;
      written = await restoreEmbedded(config, file, { batchSize, onBatch: (n) => bar.update(n) });
    } else {
      const opened = await openStore(config);
      description = opened.description;
      try {
        if (!(await opened.store.snapshots.isEmpty())) throw new CommandFailure(notEmptyMessage(description));
        written = await copyInto(opened.store, file, { batchSize, onBatch: (n) => bar.update(n) });
      } finally {
        await opened.stop();
      }
    }
  } finally {
    bar.stop();
  }
  process.stdout.write(
    summaryLine(
      { file, restored: written, counts: backup.trailer.counts, into: description },
      interactive(),
      `Restored ${file} into ${description}: ${describeCounts(backup.trailer.counts) || 'no records'}.`,
    ),
  );
  return 0;
}

function storeKind(config: Config): 'embedded' | 'mongodb' | 'mongodb-memory' {
  return config.store === 'auto' ? (config.mongodbUri ? 'mongodb' : 'embedded') : config.store;
}

const MONGODB_URI = /^mongodb(\+srv)?:\/\//;

/** The configuration of the store `--to` names: a MongoDB URI, or an embedded data directory. */
export function targetConfig(config: Config, to: string): Config {
  if (MONGODB_URI.test(to)) return { ...config, store: 'mongodb', mongodbUri: to };
  return { ...config, store: 'embedded', mongodbUri: '', dataDir: to };
}

/** What identifies a store: its kind and place (a MongoDB URI with its database prefix). */
export function storeIdentity(config: Config): string {
  const kind = storeKind(config);
  if (kind === 'embedded') return `embedded:${path.resolve(config.dataDir)}`;
  return `${kind}:${config.mongodbUri}#${config.mongodb.dbPrefix}`;
}

/** What a migrate's work directory remembers between runs. */
interface MigrateProgress {
  /** SHA-256 of the target's identity (never the URI itself: it may hold credentials). */
  target: string;
  /** The snapshot file's checksum (its trailer's). */
  sha256: string;
  total: number;
  /** Records known to be in the target. */
  written: number;
}

async function readProgress(file: string): Promise<MigrateProgress | null> {
  if (!existsSync(file)) return null;
  return JSON.parse(await readFile(file, 'utf8')) as MigrateProgress;
}

/** Replaced whole (write, then rename), so a crash leaves the old progress or the new one. */
async function saveProgress(file: string, progress: MigrateProgress): Promise<void> {
  await writeFile(`${file}.tmp`, JSON.stringify(progress));
  await rename(`${file}.tmp`, file);
}

/** Where a migrate copies to, and the work directory that lets it resume. */
interface MigratePlan {
  source: Config;
  target: Config;
  /** SHA-256 of the target's identity, as MigrateProgress.target records it. */
  targetId: string;
  work: string;
  progressFile: string;
  snapshotFile: string;
  batchSize: number;
}

export async function migrateCommand(args: string[]): Promise<number> {
  const { values } = parse({
    args,
    options: {
      to: { type: 'string' },
      work: { type: 'string' },
      'batch-size': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  if (values.help) {
    process.stdout.write(MIGRATE_HELP);
    return 0;
  }
  if (!values.to) throw new UsageError('--to MONGODB_URI|DATA_DIR is required');
  const plan = migratePlan(values.to, values.work ?? 'folio-migrate', batchSizeOf(values['batch-size']));
  await mkdir(plan.work, { recursive: true });
  const recorded = await readProgress(plan.progressFile);
  if (recorded && recorded.target !== plan.targetId) {
    throw new CommandFailure(
      `${plan.work} holds an unfinished migration to another store: finish it, or remove ${plan.work} (or pass another --work)`,
    );
  }
  // Embedded targets are locked for the whole copy: no server may start on a half-copied store.
  const opened = await openStore(plan.target);
  let stopping = false;
  const onSignal = () => {
    stopping = true;
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    const progress = recorded
      ? await resumedProgress(plan, recorded, opened.description)
      : await snapshotSource(plan, opened.store, opened.description);
    await copySnapshot(plan, opened.store, progress, () => stopping);
    if (progress.written < progress.total) {
      process.stderr.write(
        `Interrupted after ${progress.written} of ${progress.total} records; run the same command again to resume.\n`,
      );
      return 130;
    }
    await finishMigration(plan, progress, opened.description);
    return 0;
  } finally {
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    await opened.stop();
  }
}

/** The source the environment selects, the target `--to` names, and the work directory's files. */
function migratePlan(to: string, work: string, batchSize: number): MigratePlan {
  const source = loadConfig();
  assertSourceExists(source);
  const target = targetConfig(source, to);
  if (storeIdentity(source) === storeIdentity(target)) {
    throw new UsageError(
      '--to names the store being copied: give another data directory or MongoDB deployment',
    );
  }
  return {
    source,
    target,
    targetId: createHash('sha256').update(storeIdentity(target)).digest('hex'),
    work,
    progressFile: path.join(work, 'progress.json'),
    snapshotFile: path.join(work, 'snapshot.folio-backup'),
    batchSize,
  };
}

/** A run that resumes: the snapshot on disk must be the one the progress was recorded for. */
async function resumedProgress(
  plan: MigratePlan,
  progress: MigrateProgress,
  targetName: string,
): Promise<MigrateProgress> {
  const backup = await verified(plan.snapshotFile);
  if (backup.trailer.sha256 !== progress.sha256) {
    throw new CommandFailure(
      `${plan.snapshotFile} is not the snapshot ${plan.progressFile} was recorded for: remove ${plan.work}`,
    );
  }
  process.stderr.write(
    `Resuming the migration into ${targetName}: ${progress.written} of ${progress.total} records were copied.\n`,
  );
  return progress;
}

/** A first run: the target must be empty; the source's snapshot is written and checked. */
async function snapshotSource(
  plan: MigratePlan,
  target: Store,
  targetName: string,
): Promise<MigrateProgress> {
  if (!(await target.snapshots.isEmpty())) throw new CommandFailure(notEmptyMessage(targetName));
  await rm(plan.snapshotFile, { force: true });
  const from = await openStore(plan.source, { lockDataDir: false });
  try {
    process.stderr.write(`Taking a snapshot of ${from.description}...\n`);
    const bar = countBar('snapshot');
    try {
      await snapshotTo(from.store, plan.snapshotFile, {
        source: from.store.kind,
        gzip: false,
        onRecord: (n) => bar.update(n),
      });
    } finally {
      bar.stop();
    }
  } finally {
    await from.stop();
  }
  const backup = await verified(plan.snapshotFile);
  const progress = {
    target: plan.targetId,
    sha256: backup.trailer.sha256,
    total: backup.trailer.records,
    written: 0,
  };
  await saveProgress(plan.progressFile, progress);
  return progress;
}

/** Copy the snapshot's records not yet in the target, saving the progress after each batch. */
async function copySnapshot(
  plan: MigratePlan,
  target: Store,
  progress: MigrateProgress,
  stopRequested: () => boolean,
): Promise<void> {
  const bar = recordBar('migrate', progress.total, progress.written);
  try {
    await copyInto(target, plan.snapshotFile, {
      batchSize: plan.batchSize,
      skip: progress.written,
      onBatch: async (written) => {
        progress.written = written;
        await saveProgress(plan.progressFile, progress);
        bar.update(written);
      },
      stopRequested,
    });
  } finally {
    bar.stop();
  }
}

/** Done: the snapshot holds secrets, and nothing is left to resume. */
async function finishMigration(
  plan: MigratePlan,
  progress: MigrateProgress,
  targetName: string,
): Promise<void> {
  await rm(plan.progressFile, { force: true });
  await rm(plan.snapshotFile, { force: true });
  await rmdir(plan.work).catch(() => {});
  process.stdout.write(
    summaryLine(
      { migrated: progress.total, into: targetName },
      interactive(),
      `Copied ${progress.total} records into ${targetName}. Point Folio at it (see README) and start it.`,
    ),
  );
}
