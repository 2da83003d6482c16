/**
 * Parse Server on PostgreSQL: the peer a team choosing a self-hosted document API in Node would
 * weigh against Folio (REST classes and objects, queries, counts, MongoDB-native and able to run
 * on PostgreSQL). Nothing here is a dependency of Folio:
 * - Parse Server is installed from npm into the bench's temporary folder at bench time;
 * - PostgreSQL is Debian's `postgresql` package: a throw-away cluster is made in the temporary
 *   folder (`initdb`, `fsync` on, as Folio's `synchronous=FULL`), on loopback, and removed after.
 * Where PostgreSQL's server programs are not installed, or npm cannot install Parse Server, the
 * peer is skipped with the reason, which the report prints.
 *
 * The same rows as every other system: `Item` holds the GET/POST/PATCH documents, `Big` the
 * 100,000 rows of the list and count workloads, with a btree index on (category, price), the
 * index Folio's list uses. `Big` is filled by SQL in one statement (Parse's own REST inserts
 * would take minutes); its schema is declared through Parse first, so Parse reads the rows as
 * its own.
 */
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { chmod, mkdir, readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { freePort, type Server, startProcess } from '../processes.js';
import { BIG_DOCS, BODY, CATEGORIES, PAGE } from './rows.js';
import { cycle, patchBody, type Target, target, WORKLOADS } from './targets.js';

const run = promisify(execFile);
export const PARSE_SERVER_VERSION = '9';
const APP_ID = 'bench';
const MASTER_KEY = 'bench-master-key';

export interface ParsePeer {
  server: Server;
  /** Object ids of the `Item` rows, for GET and PATCH in turn. */
  itemIds: string[];
  /** Parse's node process and every PostgreSQL process of the cluster: their CPU is Parse's. */
  cpuPids(): Promise<number[]>;
  stop(): Promise<void>;
}

/** The folder of PostgreSQL's server programs, or null (with why) where none is installed. */
export async function postgresBinDir(): Promise<{ dir: string } | { skip: string }> {
  const candidates: string[] = [];
  try {
    const { stdout } = await run('pg_config', ['--bindir']);
    candidates.push(stdout.trim());
  } catch {
    // pg_config belongs to the -dev package; the server's folder is found below instead.
  }
  const debian = '/usr/lib/postgresql';
  if (existsSync(debian)) {
    const versions = (await readdir(debian)).sort((a, b) => Number(b) - Number(a));
    candidates.push(...versions.map((v) => join(debian, v, 'bin')));
  }
  const dir = candidates.find((d) => existsSync(join(d, 'initdb')) && existsSync(join(d, 'pg_ctl')));
  return dir
    ? { dir }
    : { skip: 'PostgreSQL is not installed (Debian: apt-get install postgresql); Parse Server skipped' };
}

/** Parse Server from npm into `dir/parse-server`: never a dependency of Folio. */
async function install(dir: string, spec: string): Promise<void> {
  process.stderr.write(`installing ${spec} into ${dir} ...\n`);
  const prefix = join(dir, 'parse-server');
  await run('npm', ['install', '--prefix', prefix, '--no-audit', '--no-fund', '--no-save', spec], {
    cwd: dir,
  });
}

/** PostgreSQL refuses to run as root: as root, its programs run as the `postgres` user. */
function asPostgres(bin: string, args: string[]): [string, string[]] {
  return process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
}

async function postgres(binDir: string, program: string, args: string[]): Promise<string> {
  const [file, argv] = asPostgres(join(binDir, program), args);
  const { stdout } = await run(file, argv, { maxBuffer: 16 * 2 ** 20 });
  return stdout;
}

function headers(master = false): Record<string, string> {
  return {
    'X-Parse-Application-Id': APP_ID,
    'Content-Type': 'application/json',
    ...(master ? { 'X-Parse-Master-Key': MASTER_KEY } : {}),
  };
}

async function parseCall(url: string, method: string, body: unknown, master = false): Promise<unknown> {
  const res = await fetch(url, { method, headers: headers(master), body: JSON.stringify(body) });
  const text = await res.text();
  if (!res.ok) throw new Error(`Parse Server ${method} ${url}: ${res.status} ${text.slice(0, 300)}`);
  return JSON.parse(text);
}

/** Children of `pid` (PostgreSQL's backends, checkpointer, WAL writer...). */
async function childrenOf(pid: number): Promise<number[]> {
  const { stdout } = await run('ps', ['-o', 'pid=', '--ppid', String(pid)]).catch(() => ({ stdout: '' }));
  return stdout
    .split('\n')
    .filter((line) => line.trim())
    .map(Number);
}

/**
 * Installs Parse Server into `dir/parse-server`, makes and starts the cluster, starts Parse
 * Server over it and seeds both classes.
 */
export async function startParsePeer(dir: string, itemCount: number): Promise<ParsePeer | { skip: string }> {
  const bin = await postgresBinDir();
  if ('skip' in bin) return bin;
  const installing = install(dir, `parse-server@${PARSE_SERVER_VERSION}`).then(
    () => null,
    (error: Error) => ({ skip: `npm could not install Parse Server here (${error.message.split('\n')[0]})` }),
  );
  const pgDir = join(dir, 'postgres');
  await mkdir(pgDir, { recursive: true });
  // The postgres user must reach its cluster's folder (and the socket beside it).
  await chmod(dir, 0o777);
  await chmod(pgDir, 0o777);
  const data = join(pgDir, 'data');
  const port = await freePort();
  await postgres(bin.dir, 'initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-instructions']);
  await postgres(bin.dir, 'pg_ctl', [
    '-D',
    data,
    '-l',
    join(pgDir, 'postgres.log'),
    '-w',
    '-o',
    `-p ${port} -k ${pgDir} -c listen_addresses=127.0.0.1 -c fsync=on -c synchronous_commit=on -c max_connections=200`,
    'start',
  ]);
  const postmaster = Number((await readFile(join(data, 'postmaster.pid'), 'utf8')).split('\n')[0]);
  const stopCluster = () =>
    postgres(bin.dir, 'pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']).then(() => {});
  try {
    const failed = await installing;
    if (failed) {
      await stopCluster();
      return failed;
    }
    const parsePort = await freePort();
    const options = {
      appId: APP_ID,
      masterKey: MASTER_KEY,
      databaseURI: `postgres://postgres@127.0.0.1:${port}/postgres`,
      port: String(parsePort),
      mountPath: '/parse',
      serverURL: `http://127.0.0.1:${parsePort}/parse`,
    };
    const server = await startProcess(
      'Parse Server',
      [
        join(dir, 'parse-server/node_modules/parse-server/bin/parse-server'),
        ...Object.entries(options).flatMap(([name, value]) => [`--${name}`, value]),
      ],
      { NODE_ENV: 'production' },
      join(dir, 'parse-server.log'),
      /parse-server running on (\S+)/,
      dir,
    );
    const base = server.url.replace(/\/$/, '');
    // The classes' schemas, declared through Parse so that it reads the SQL-filled rows as its own.
    const types = (fields: Record<string, string>) =>
      Object.fromEntries(Object.entries(fields).map(([name, type]) => [name, { type }]));
    for (const [className, fields] of [
      ['Item', { title: 'String', n: 'Number', price: 'Number', tags: 'Array', address: 'Object' }],
      ['Big', { category: 'String', price: 'Number', sku: 'String', n: 'Number' }],
    ] as const)
      await parseCall(`${base}/schemas/${className}`, 'POST', { className, fields: types(fields) }, true);
    // One create per document, 16 at a time (Parse 9's /batch answers 500 to creates here).
    const itemIds: string[] = new Array(itemCount);
    let next = 0;
    const worker = async () => {
      for (let n = next++; n < itemCount; n = next++) {
        const created = (await parseCall(`${base}/classes/Item`, 'POST', { ...BODY, n })) as {
          objectId: string;
        };
        itemIds[n] = created.objectId;
      }
    };
    await Promise.all(Array.from({ length: 16 }, worker));
    // The rows of rows.ts's bigRow(i), computed by PostgreSQL: same categories, prices and skus.
    await postgres(bin.dir, 'psql', [
      '-h',
      pgDir,
      '-p',
      String(port),
      '-U',
      'postgres',
      '-v',
      'ON_ERROR_STOP=1',
      '-c',
      `INSERT INTO "Big" ("objectId", "createdAt", "updatedAt", category, price, sku, n)
       SELECT 'b' || lpad(i::text, 9, '0'), now(), now(),
              'cat-' || ((i::bigint * 7919) % ${CATEGORIES}), (i::bigint * 104729) % 100000, 'sku-' || i, i
       FROM generate_series(0, ${BIG_DOCS - 1}) AS i;
       CREATE INDEX big_category_price ON "Big" (category, price);
       ANALYZE "Big";`,
    ]);
    return {
      server,
      itemIds,
      cpuPids: async () => [
        ...(server.child.pid === undefined ? [] : [server.child.pid]),
        postmaster,
        ...(await childrenOf(postmaster)),
      ],
      stop: stopCluster,
    };
  } catch (error) {
    await stopCluster().catch(() => {});
    throw error;
  }
}

/** The where clause of the list and count workloads, as Parse's REST API takes it. */
const where = (category: string) => encodeURIComponent(JSON.stringify({ category }));

/** Parse Server's equivalents of the five throughput workloads (its update sets fields: a merge). */
export function parseTargets(peer: ParsePeer, nextCategory: () => string): Target[] {
  const url = new URL(peer.server.url).origin;
  const nextId = cycle(peer.itemIds);
  const h = { headers: () => ({ 'X-Parse-Application-Id': APP_ID }) };
  const targets = [
    target('Parse Server', WORKLOADS.get, url, 'GET', () => `/parse/classes/Item/${nextId()}`, h),
    target('Parse Server', WORKLOADS.post, url, 'POST', () => '/parse/classes/Item', {
      ...h,
      body: () => JSON.stringify(BODY),
    }),
    target('Parse Server', WORKLOADS.patch, url, 'PUT', () => `/parse/classes/Item/${nextId()}`, {
      ...h,
      body: patchBody,
    }),
    target(
      'Parse Server',
      WORKLOADS.list,
      url,
      'GET',
      () => `/parse/classes/Big?where=${where(nextCategory())}&order=price&limit=${PAGE}`,
      h,
    ),
    target(
      'Parse Server',
      WORKLOADS.count,
      url,
      'GET',
      () => `/parse/classes/Big?where=${where(nextCategory())}&count=1&limit=0`,
      h,
    ),
  ];
  return targets.map((t) => ({ ...t, cpuPids: peer.cpuPids }));
}
