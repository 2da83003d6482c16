/**
 * Folio beside its peers, in one run on one machine, so the ratios hold however noisy it is:
 * bare Koa answering a constant document of the same bytes (the HTTP ceiling), raw
 * better-sqlite3 on the same rows (the storage ceiling, bench/workloads/rawSqlite.ts), Folio on
 * the embedded store, json-server and pouchdb-server (both installed from npm into a temporary
 * folder, never dependencies of Folio), on GET by id and POST create, and (bench/workloads/)
 * PATCH merge, a filtered list and a count on 100,000 rows, plus the one-shot workloads
 * (import, export, bulk) of the baselines beside Folio's figures handed in by bench/run.ts.
 *
 * Every server runs in a process of its own; the load comes from this process (autocannon,
 * keep-alive, fixed connections). Each target is warmed up, then measured in rounds taken in
 * turn across targets (noise spreads over all of them), and the median round is reported.
 * Folio runs as `folio serve` would in production: access log on (to a file), the plan's rate
 * limits on, requests spread over a pool of keys so the per-key limit never caps them.
 *
 * Writes docs/performance.md (its last section, each report's findings newest first, copied from
 * bench/reportHistory.md, where a new report's bullet is written by hand) and
 * docs/performance.json. Options (env): PEERS_CONNECTIONS (32),
 * PEERS_SECONDS per round (2), PEERS_ROUNDS (3), PEERS_WARMUP_SECONDS (1), PEERS_ONLY
 * (comma-separated target names, e.g. `folio-get`), PEERS_WRITE=0 to write no files,
 * PEERS_BIG_DOCS (100000) for the list and count workloads, PEERS_FOLIO_NODE_ARGS (extra node
 * options for Folio's process, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`), PEERS_PROFILE=0 to
 * leave out the profiled pass after the rounds (each Folio workload with a target again, on a
 * fresh server with V8's profiler, PEERS_PROFILE_SECONDS (3) each; the report shows where the
 * time of each missed target goes).
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { cpus, freemem, loadavg, release, tmpdir, totalmem, type } from 'node:os';
import { join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import autocannon from 'autocannon';
import { type ProfileSummary, profileLine } from './cpuProfile.js';
import { missedProfilesSection } from './missedProfiles.js';
import { median } from './stats.js';
import { judgeTargets, type Lookup, STORAGE_TARGETS, spread, verdictLine } from './storageTargets.js';
import { equivalentWork, type WorkEstimate } from './workBudget.js';
import { folioLiveLatency, LIVE_SUBSCRIBERS, liveTable, parseLiveLatency } from './workloads/liveQuery.js';
import {
  APP_ID,
  PARSE_SERVER_VERSION,
  type ParsePeer,
  parseTargets,
  startParsePeer,
} from './workloads/parseServer.js';
import { seedFolioBig, startJsonServerBig, startRawSqlite } from './workloads/peerServers.js';
import { FOLIO_UNCACHED, RAW_ROWS, workloadTargets } from './workloads/peerTargets.js';
import { mainThreadCpuMs, processCpuMs, processCpuTimes } from './workloads/processCpu.js';
import { type OptionalProfiles, optionalProfiles, profiledRun } from './workloads/profiledRun.js';
import { BODY, categoryCycle, PROFILE_BULK_REQUESTS } from './workloads/rows.js';
import {
  type Baselines,
  baselineTable,
  type FolioSide,
  measureBaselines,
  oneShotVerdicts,
  rawBaselines,
} from './workloads/transferBaselines.js';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const CONNECTIONS = Number(process.env.PEERS_CONNECTIONS ?? 32);
const SECONDS = Number(process.env.PEERS_SECONDS ?? 2);
const ROUNDS = Number(process.env.PEERS_ROUNDS ?? 3);
const WARMUP_SECONDS = Number(process.env.PEERS_WARMUP_SECONDS ?? 1);
const ONLY = process.env.PEERS_ONLY ? new Set(process.env.PEERS_ONLY.split(',')) : null;
const FOLIO_NODE_ARGS = process.env.PEERS_FOLIO_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
/** Folio's workloads profiled after the rounds (PEERS_PROFILE=0: not), each for this long. */
const PROFILE = process.env.PEERS_PROFILE !== '0';
const PROFILE_SECONDS = Number(process.env.PEERS_PROFILE_SECONDS ?? 3);
const JSON_SERVER_VERSION = '0.17.4';
const POUCHDB_SERVER_VERSION = '4.2.0';
const SEED_DOCS = 1000;
const KEY_POOL = 100;
/**
 * The calibration levels (bench/workBudget.ts): bare Koa burning this many µs more per request,
 * chosen to bracket each workload's target and Folio on this machine.
 */
const WORK_LEVELS_US = {
  get: microsList(process.env.PEERS_WORK_GET_US ?? '20,60'),
  post: microsList(process.env.PEERS_WORK_POST_US ?? '100,300'),
};

function microsList(text: string): number[] {
  return text
    .split(',')
    .map(Number)
    .filter((n) => Number.isInteger(n) && n > 0);
}
/** The project's targets against bare Koa (issue 14), by workload. */
const BARE_KOA_TARGETS = [
  ['GET by id', 0.6],
  ['POST create', 0.35],
] as const;
/** Set when the Parse Server peer could not run here (PostgreSQL missing), with the reason. */
let parseSkipped: string | null = null;
/** The paragraph before the live-query table in the report. */
function liveText(): string[] {
  return [
    `**Live updates beside Parse Server** (\`bench/workloads/liveQuery.ts\`): ${LIVE_SUBSCRIBERS} subscribers on each`,
    '(Folio: SSE, one per key; Parse: live-query WebSockets on one class), creates paced every 20 ms,',
    'write-to-event latency over every (write, subscriber) pair, subscribers and writer in the bench process.',
    '',
  ];
}
/** A spread as a percentage ("n/a" with fewer than two rounds). */
const percent = (x: number) => (Number.isFinite(x) ? `${(x * 100).toFixed(0)} %` : 'n/a');
/** Requests per second per key in Folio's Team plan here: high enough never to cap the bench. */
const RATE_LIMIT = 1_000_000;

export interface Server {
  name: string;
  url: string;
  child: ChildProcess;
}

export interface Target {
  name: string;
  system:
    | 'bare Koa'
    | 'bare Koa + work'
    | 'Koa + duties'
    | 'Folio'
    | 'raw better-sqlite3'
    | 'raw better-sqlite3, same rows'
    | 'Folio, no query cache'
    | 'json-server'
    | 'pouchdb-server'
    | 'Parse Server';
  workload: string;
  /** Bare Koa + work only: the CPU it burns per request on top of bare Koa, µs. */
  workMicros?: number;
  /**
   * The processes whose CPU is the server's, where it is more than the one listening (Parse
   * Server: its node process and PostgreSQL's); otherwise the listening process.
   */
  cpuPids?: () => Promise<number[]>;
  options: autocannon.Options;
}

export interface RoundResult {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
  /**
   * CPU time the server's process (all its threads) spent per answered request, in µs; NaN where
   * /proc is not there. Steadier than req/s when the load generator shares a busy machine.
   */
  cpuMicrosPerRequest: number;
  /**
   * The part of that CPU spent in the kernel (system time: socket and file writes, page faults),
   * 0 to 1: where two servers' CPU moves between runs, whether it moved in their own code.
   */
  kernelShare: number;
  /**
   * The part of a one-process server's CPU spent on its main thread, 0 to 1 (NaN for a server of
   * several processes): where a server's CPU per request moves between runs, whether its own
   * JavaScript moved or its other threads (workers, libuv's pool, the garbage collector's helpers).
   */
  mainThreadShare: number;
}

/** Start `args` with node; resolves once its output (kept in `logFile`) shows a URL. */
export async function startProcess(
  name: string,
  args: string[],
  env: Record<string, string>,
  logFile: string,
  urlPattern: RegExp,
  cwd = ROOT,
): Promise<Server> {
  const log = await open(logFile, 'w');
  const child = spawn(process.execPath, args, {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', log.fd, 'inherit'],
  });
  await log.close();
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited: ${await readFile(logFile, 'utf8')}`);
    const url = urlPattern.exec(await readFile(logFile, 'utf8'))?.[1];
    if (url) return { name, url, child };
    if (Date.now() > deadline) throw new Error(`${name} did not start`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

async function stop(server: Server): Promise<void> {
  if (server.child.exitCode !== null || server.child.signalCode !== null) return;
  const exited = once(server.child, 'exit');
  server.child.kill('SIGTERM');
  const timer = setTimeout(() => server.child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address();
      const port = typeof address === 'object' && address ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

export async function call(
  url: string,
  method: string,
  body: unknown,
  token?: string,
): Promise<{ status: number; text: string }> {
  const headers: Record<string, string> = { 'Content-Type': 'application/json' };
  if (token) headers.Authorization = `Bearer ${token}`;
  const res = await fetch(url, {
    method,
    headers,
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return { status: res.status, text: await res.text() };
}

export async function expectStatus(
  promise: Promise<{ status: number; text: string }>,
  status: number,
): Promise<string> {
  const res = await promise;
  if (res.status !== status)
    throw new Error(`expected ${status}, got ${res.status}: ${res.text.slice(0, 200)}`);
  return res.text;
}

/**
 * `folio serve` as in production (data in `dir/tag`, its log in `dir/tag.log`): request log at
 * info, written to a file. The limiter still
 * counts every request; on a fast machine the Team plan's 200/s per key over the key pool would
 * cap the measurement (a project holds at most 100 active keys), so the plan's rate is raised.
 */
function startFolio(
  dir: string,
  name: string,
  tag: string,
  env: Record<string, string> = {},
  nodeArgs: string[] = [],
): Promise<Server> {
  return startProcess(
    name,
    [...FOLIO_NODE_ARGS, ...nodeArgs, 'bin/folio.js', 'serve'],
    {
      PORT: '0',
      HOST: '127.0.0.1',
      FOLIO_DATA_DIR: join(dir, tag),
      FOLIO_BOOTSTRAP: 'false',
      FOLIO_LOG_LEVEL: 'info',
      FOLIO_PLANS_TEAM_REQUESTS_PER_SECOND: String(RATE_LIMIT),
      ...env,
    },
    join(dir, `${tag}.log`),
    /listening on (\S+)/,
  );
}

/** A second Folio, query cache off, over the same 100,000 rows (FOLIO_UNCACHED). */
async function startFolioUncached(dir: string): Promise<{ server: Server; nextKey: () => string }> {
  const server = await startFolio(dir, FOLIO_UNCACHED, 'folio-uncached', {
    FOLIO_EMBEDDED_QUERY_CACHE_MB: '0',
  });
  const nextKey = cycle((await folioTenant(server.url)).keys);
  await seedFolioBig(server.url, nextKey());
  return { server, nextKey };
}

/** An account on the Team plan with a project `bench` and a pool of read-write keys. */
async function folioTenant(url: string): Promise<{ project: string; keys: string[] }> {
  const signup = JSON.parse(
    await expectStatus(
      call(`${url}/api/auth/signup`, 'POST', {
        email: 'bench@example.test',
        password: 'correct horse battery',
      }),
      201,
    ),
  );
  const session: string = signup.token;
  await expectStatus(call(`${url}/api/account`, 'PATCH', { plan: 'team' }, session), 200);
  await expectStatus(call(`${url}/api/projects`, 'POST', { name: 'bench' }, session), 201);
  const keys: string[] = [];
  for (let i = 0; i < KEY_POOL; i++) {
    const created = await expectStatus(
      call(
        `${url}/api/keys`,
        'POST',
        { project: 'bench', name: `bench ${i}`, env: 'test', scope: 'read-write' },
        session,
      ),
      201,
    );
    keys.push(JSON.parse(created).rawKey);
  }
  return { project: 'bench', keys };
}

/** Cycles through `items`, one per call. */
function cycle<T>(items: readonly T[]): () => T {
  let i = 0;
  return () => items[i++ % items.length] as T;
}

async function measure(target: Target, seconds: number, pid: number | undefined): Promise<RoundResult> {
  const pids = target.cpuPids ? await target.cpuPids() : [pid];
  const before = cpuOf(pids);
  // One process: how much of it ran on the main thread (schedstat, both sides in the same unit).
  const single = pids.length === 1 ? pids[0] : undefined;
  const threadsBefore = { main: mainThreadCpuMs(single), all: processCpuMs(single) };
  const result = await autocannon({ ...target.options, connections: CONNECTIONS, duration: seconds });
  // The same processes before and after: one that started meanwhile would count its whole life.
  const after = cpuOf(pids);
  const mainShare =
    (mainThreadCpuMs(single) - threadsBefore.main) / (processCpuMs(single) - threadsBefore.all);
  const user = after.user - before.user;
  const system = after.system - before.system;
  const cpu = user + system;
  return {
    requestsPerSecond: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
    cpuMicrosPerRequest: cpu / result.requests.total,
    kernelShare: system / cpu,
    mainThreadShare: mainShare,
  };
}

interface CpuTimes {
  user: number;
  system: number;
}

/** User and system CPU time of the processes (all their threads), in µs (Linux /proc). */
function cpuOf(pids: ReadonlyArray<number | undefined>): CpuTimes {
  const sum = { user: 0, system: 0 };
  for (const pid of pids) {
    // No pid (a server not started here): NaN, as /proc has no such process.
    const { userMs, systemMs } = processCpuTimes(pid);
    sum.user += userMs * 1000;
    sum.system += systemMs * 1000;
  }
  return sum;
}

/** The process serving `url`, among the servers started for this run. */
function serverPid(servers: readonly Server[], url: string | undefined): number | undefined {
  if (!url || !URL.canParse(url)) return undefined;
  const port = new URL(url).port;
  return servers.find((s) => new URL(s.url).port === port)?.child.pid;
}

export function machine(): string {
  const cpu = cpus();
  const gib = (bytes: number) => (bytes / 2 ** 30).toFixed(1);
  return `${cpu.length} × ${cpu[0]?.model ?? 'unknown CPU'}, ${gib(totalmem())} GiB RAM (${gib(freemem())} GiB free at start), ${type()} ${release()}, Node ${process.version}`;
}

/** json-server from npm, into the temporary folder; its db holds documents of the same shape. */
/** Installs started, by spec: the peers install side by side, each start awaits its own. */
const installs = new Map<string, Promise<void>>();

function installPeer(dir: string, spec: string): Promise<void> {
  const started = installs.get(spec) ?? installInto(dir, spec);
  installs.set(spec, started);
  return started;
}

async function installInto(dir: string, spec: string): Promise<void> {
  process.stdout.write(`installing ${spec} into ${dir} ...\n`);
  // Each peer in its own folder: their dependency trees never meet.
  const folder = join(dir, spec.split('@')[0] as string);
  await promisify(execFile)(
    'npm',
    ['install', '--prefix', folder, '--no-audit', '--no-fund', '--no-save', spec],
    {
      cwd: dir,
    },
  );
}

async function startJsonServer(dir: string): Promise<Server> {
  await installPeer(dir, `json-server@${JSON_SERVER_VERSION}`);
  const db = { items: Array.from({ length: SEED_DOCS }, (_, i) => ({ id: i + 1, ...BODY, n: i })) };
  await writeFile(join(dir, 'db.json'), JSON.stringify(db));
  const jsonPort = await freePort();
  const jsonServer = await startProcess(
    'json-server',
    [
      join(dir, 'json-server/node_modules/json-server/lib/cli/bin.js'),
      join(dir, 'db.json'),
      '--port',
      String(jsonPort),
      '--host',
      '127.0.0.1',
    ],
    {},
    join(dir, 'json-server.log'),
    /(http:\/\/127\.0\.0\.1:\d+)/,
  );
  return jsonServer;
}

/**
 * pouchdb-server (the CouchDB API over PouchDB) on disk (LevelDB), with a database `items` of
 * documents `doc1`..`doc<n>` of the same shape.
 */
async function startPouchServer(dir: string): Promise<Server> {
  await installPeer(dir, `pouchdb-server@${POUCHDB_SERVER_VERSION}`);
  const port = await freePort();
  const server = await startProcess(
    'pouchdb-server',
    [
      join(dir, 'pouchdb-server/node_modules/pouchdb-server/bin/pouchdb-server'),
      '--dir',
      join(dir, 'pouchdb-data'),
      '--port',
      String(port),
      '--host',
      '127.0.0.1',
    ],
    {},
    join(dir, 'pouchdb-server.log'),
    /started on (http:\/\/127\.0\.0\.1:\d+)/,
    // It writes its own log.txt and config.json where it runs.
    dir,
  );
  await expectStatus(call(`${server.url}/items`, 'PUT', undefined), 201);
  const docs = Array.from({ length: SEED_DOCS }, (_, i) => ({ _id: `doc${i + 1}`, ...BODY, n: i }));
  await expectStatus(call(`${server.url}/items/_bulk_docs`, 'POST', { docs }), 201);
  return server;
}

const wanted = (prefix: string) => !ONLY || [...ONLY].some((name) => name.startsWith(prefix));

/** The whole `npm run bench` so far: when it started and how long its parts took (ms). */
export interface BenchTiming {
  startedMs: number;
  phases: Array<[string, number]>;
}

/**
 * `folioSide`: Folio's figures from the one-shot benches (bench/run.ts runs them first), shown
 * beside the baselines measured here; without them those cells read "n/a". `timing`: the
 * report says how long the whole run and each part took; this part adds its own two.
 */
export async function runPeerBench(folioSide: FolioSide = {}, timing?: BenchTiming): Promise<void> {
  const setupStartedMs = performance.now();
  const dir = await mkdtemp(join(tmpdir(), 'folio-peers-'));
  const servers: Server[] = [];
  let parse: ParsePeer | null = null;
  try {
    const folio = await startFolio(dir, 'Folio', 'folio');
    servers.push(folio);
    const tenant = await folioTenant(folio.url);
    const nextKey = cycle(tenant.keys);
    const ids: string[] = [];
    for (let i = 0; i < SEED_DOCS; i++) {
      const text = await expectStatus(
        call(`${folio.url}/bench/items`, 'POST', { ...BODY, n: i }, nextKey()),
        201,
      );
      ids.push(JSON.parse(text)._id);
    }
    const sample = await expectStatus(
      call(`${folio.url}/bench/items/${ids[0]}`, 'GET', undefined, nextKey()),
      200,
    );
    // The 100,000 rows of the list and count workloads, and the answers bare Koa repeats.
    await seedFolioBig(folio.url, nextKey());
    const listSample = await expectStatus(
      call(`${folio.url}/bench/big?filter[category]=cat-0&sort=price&limit=20`, 'GET', undefined, nextKey()),
      200,
    );
    const countSample = await expectStatus(
      call(`${folio.url}/bench/big?count=true&filter[category]=cat-0`, 'GET', undefined, nextKey()),
      200,
    );

    const bare = await startProcess(
      'bare Koa',
      ['--import', 'tsx', 'bench/bareKoa.ts'],
      { BARE_DOC: sample, BARE_LIST: listSample, BARE_COUNT: countSample },
      join(dir, 'bare.log'),
      /listening on (\S+)/,
    );
    servers.push(bare);
    // The same server burning a fixed amount of CPU per request, at each calibration level.
    const worked: Array<{ micros: number; url: string }> = [];
    for (const micros of new Set([...WORK_LEVELS_US.get, ...WORK_LEVELS_US.post])) {
      if (!wanted(`koa-work${micros}-`)) continue;
      const server = await startProcess(
        `bare Koa + ${micros} µs`,
        ['--import', 'tsx', 'bench/bareKoa.ts'],
        { BARE_DOC: sample, BARE_WORK_US: String(micros) },
        join(dir, `bare-work${micros}.log`),
        /listening on (\S+)/,
      );
      servers.push(server);
      worked.push({ micros, url: server.url });
    }
    const duties = await startProcess(
      'Koa + duties',
      ['--import', 'tsx', 'bench/dutiesKoa.ts'],
      { BARE_DOC: sample },
      join(dir, 'duties.log'),
      /listening on (\S+)/,
    );
    servers.push(duties);

    // Both peers install at once (npm mostly waits on the network and the disk).
    const peerInstalls = [
      wanted('json-server') ? installPeer(dir, `json-server@${JSON_SERVER_VERSION}`) : null,
      wanted('pouchdb') ? installPeer(dir, `pouchdb-server@${POUCHDB_SERVER_VERSION}`) : null,
    ];
    await Promise.all(peerInstalls);
    const jsonServer = wanted('json-server') ? await startJsonServer(dir) : null;
    if (jsonServer) servers.push(jsonServer);
    const pouch = wanted('pouchdb') ? await startPouchServer(dir) : null;
    if (pouch) servers.push(pouch);
    const raw = wanted('raw') ? await startRawSqlite(dir) : null;
    if (raw) servers.push(raw);
    const jsonBig = jsonServer ? await startJsonServerBig(dir) : null;
    if (jsonBig) servers.push(jsonBig);
    const folioUncached = wanted('folionc') ? await startFolioUncached(dir) : null;
    if (folioUncached) servers.push(folioUncached.server);
    if (wanted('parse')) {
      const started = await startParsePeer(dir, installPeer, SEED_DOCS);
      if ('skip' in started) {
        parseSkipped = started.skip;
        process.stdout.write(`${started.skip}\n`);
      } else {
        parse = started;
        servers.push(started.server);
      }
    }

    const body = JSON.stringify(BODY);
    const json = { 'content-type': 'application/json' };
    const nextId = cycle(ids);
    const nextNumber = cycle(Array.from({ length: SEED_DOCS }, (_, i) => i + 1));
    const allTargets: Target[] = [
      { name: 'koa-get', system: 'bare Koa', workload: 'GET by id', options: { url: `${bare.url}/docs/1` } },
      {
        name: 'koa-post',
        system: 'bare Koa',
        workload: 'POST create',
        options: { url: `${bare.url}/docs`, method: 'POST', headers: json, body },
      },
      ...worked.flatMap(({ micros, url }) =>
        (['get', 'post'] as const)
          .filter((kind) => WORK_LEVELS_US[kind].includes(micros))
          .map(
            (kind): Target => ({
              name: `koa-work${micros}-${kind}`,
              system: 'bare Koa + work',
              workload: kind === 'get' ? 'GET by id' : 'POST create',
              workMicros: micros,
              options:
                kind === 'get'
                  ? { url: `${url}/docs/1` }
                  : { url: `${url}/docs`, method: 'POST', headers: json, body },
            }),
          ),
      ),
      {
        name: 'duties-get',
        system: 'Koa + duties',
        workload: 'GET by id',
        options: {
          url: duties.url,
          requests: [
            {
              method: 'GET',
              path: '/docs/1',
              setupRequest: (request) => {
                request.headers = { authorization: `Bearer ${nextKey()}` };
                return request;
              },
            },
          ],
        },
      },
      {
        name: 'duties-post',
        system: 'Koa + duties',
        workload: 'POST create',
        options: {
          url: duties.url,
          requests: [
            {
              method: 'POST',
              path: '/docs',
              body,
              setupRequest: (request) => {
                request.headers = { ...json, authorization: `Bearer ${nextKey()}` };
                return request;
              },
            },
          ],
        },
      },
      {
        name: 'folio-get',
        system: 'Folio',
        workload: 'GET by id',
        options: {
          url: folio.url,
          requests: [
            {
              method: 'GET',
              setupRequest: (request) => {
                request.path = `/bench/items/${nextId()}`;
                request.headers = { authorization: `Bearer ${nextKey()}` };
                return request;
              },
            },
          ],
        },
      },
      {
        name: 'folio-post',
        system: 'Folio',
        workload: 'POST create',
        options: {
          url: folio.url,
          requests: [
            {
              method: 'POST',
              path: '/bench/items',
              body,
              setupRequest: (request) => {
                request.headers = { ...json, authorization: `Bearer ${nextKey()}` };
                return request;
              },
            },
          ],
        },
      },
      {
        name: 'json-server-get',
        system: 'json-server',
        workload: 'GET by id',
        options: {
          url: jsonServer?.url ?? '',
          requests: [
            {
              method: 'GET',
              setupRequest: (request) => {
                request.path = `/items/${nextNumber()}`;
                return request;
              },
            },
          ],
        },
      },
      {
        name: 'json-server-post',
        system: 'json-server',
        workload: 'POST create',
        options: { url: `${jsonServer?.url}/items`, method: 'POST', headers: json, body },
      },
      {
        name: 'pouchdb-get',
        system: 'pouchdb-server',
        workload: 'GET by id',
        options: {
          url: pouch?.url ?? '',
          requests: [
            {
              method: 'GET',
              setupRequest: (request) => {
                request.path = `/items/doc${nextNumber()}`;
                return request;
              },
            },
          ],
        },
      },
      {
        name: 'pouchdb-post',
        system: 'pouchdb-server',
        workload: 'POST create',
        options: { url: `${pouch?.url}/items`, method: 'POST', headers: json, body },
      },
    ];
    allTargets.push(
      ...workloadTargets({
        bare,
        folio,
        raw,
        jsonServer,
        jsonBig,
        pouch,
        folioUncached,
        nextKey,
        nextId,
        nextNumber,
      }),
      ...(parse ? parseTargets(parse, categoryCycle()) : []),
    );
    const targets = allTargets.filter((t) => !ONLY || ONLY.has(t.name));

    const pid = (target: Target) => serverPid(servers, target.options.url);
    const measureStartedMs = performance.now();
    timing?.phases.push(['peers: servers and seeds', measureStartedMs - setupStartedMs]);
    for (const target of targets) await measure(target, WARMUP_SECONDS, pid(target));
    const rounds = new Map<string, RoundResult[]>(targets.map((t) => [t.name, []]));
    for (let round = 1; round <= ROUNDS; round++) {
      for (const target of targets) {
        const result = await measure(target, SECONDS, pid(target));
        rounds.get(target.name)?.push(result);
        process.stdout.write(
          `round ${round} ${target.name.padEnd(18)} ${result.requestsPerSecond.toFixed(0).padStart(7)} req/s  p50 ${result.p50Ms} ms  p99 ${result.p99Ms} ms  cpu ${result.cpuMicrosPerRequest.toFixed(1)} µs/req (kernel ${percent(result.kernelShare)}, main thread ${percent(result.mainThreadShare)})${result.non2xx || result.errors ? `  non-2xx ${result.non2xx} errors ${result.errors}` : ''}\n`,
        );
      }
    }
    // Write-to-event latency, Folio's SSE beside Parse's live queries, same subscribers and writes.
    const folioLive = wanted('live')
      ? await folioLiveLatency(folio.url, tenant.project, tenant.keys, 'live')
      : null;
    const parseLive = parse && wanted('live') ? await parseLiveLatency(dir, parse.server.url, APP_ID) : null;
    const live = liveTable(folioLive, parseLive);
    // raw better-sqlite3's one-shot figures come from bench/transfer.ts, measured in turn with Folio's.
    const pouchBaselines = ONLY ? {} : await measureBaselines(pouch);
    const raws = rawBaselines(folioSide.transfer);
    const baselines = { ...raws, ...pouchBaselines, spreads: { ...raws.spreads, ...pouchBaselines.spreads } };
    timing?.phases.push(['peers: rounds and baselines', performance.now() - measureStartedMs]);
    const profileStartedMs = performance.now();
    const profiled = await optionalProfiles(PROFILE, 'PEERS_PROFILE=0', () =>
      profileFolio(dir, folio, targets),
    );
    if (PROFILE) timing?.phases.push(['peers: profiles', performance.now() - profileStartedMs]);
    await report(targets, rounds, folioSide, baselines, timing, live, profiled);
  } finally {
    for (const server of servers.reverse()) await stop(server);
    await parse?.stop();
    await rm(dir, { recursive: true, force: true });
  }
}

/**
 * Folio's workloads with a target again, one after another, on a fresh `folio serve` over the
 * same data and port with the profiler on (after every measurement: the profiler slows it), so
 * the report can show where the time of a missed target goes. The measured server is stopped
 * first: the data directory is one process's at a time.
 */
async function profileFolio(
  dir: string,
  folio: Server,
  targets: readonly Target[],
): Promise<Map<string, ProfileSummary>> {
  const workloads = new Set(STORAGE_TARGETS.map((t) => t.workload));
  const profiled = targets.filter((t) => t.system === 'Folio' && workloads.has(t.workload));
  if (profiled.length === 0) return new Map();
  await stop(folio);
  const load = (target: Target, duration: number) =>
    autocannon({ ...target.options, connections: CONNECTIONS, duration });
  return profiledRun(
    join(dir, 'profiles'),
    async (nodeArgs) => {
      const server = await startFolio(
        dir,
        'Folio, profiled',
        'folio',
        { PORT: new URL(folio.url).port },
        nodeArgs,
      );
      return { stop: () => stop(server) };
    },
    profiled.map((target) => ({
      name: target.workload,
      warmUp: () => load(target, WARMUP_SECONDS),
      run: async () => (await load(target, PROFILE_SECONDS)).requests.total,
    })),
  );
}

async function report(
  targets: Target[],
  rounds: Map<string, RoundResult[]>,
  folioSide: FolioSide,
  baselines: Baselines,
  timing: BenchTiming | undefined,
  live: string[],
  { profiles, notProfiled }: OptionalProfiles,
): Promise<void> {
  const rows = targets.map((t) => {
    const results = rounds.get(t.name) ?? [];
    return {
      name: t.name,
      system: t.system,
      workMicros: t.workMicros,
      workload: t.workload,
      requestsPerSecond: median(results.map((r) => r.requestsPerSecond)),
      p50Ms: median(results.map((r) => r.p50Ms)),
      p99Ms: median(results.map((r) => r.p99Ms)),
      cpuMicrosPerRequest: median(results.map((r) => r.cpuMicrosPerRequest)),
      kernelShare: median(results.map((r) => r.kernelShare)),
      mainThreadShare: median(results.map((r) => r.mainThreadShare)),
      non2xx: results.reduce((sum, r) => sum + r.non2xx, 0),
      errors: results.reduce((sum, r) => sum + r.errors, 0),
      rounds: results,
    };
  });
  // Grouped by workload, then system, in the order the targets list them.
  const workloadOrder = [...new Set(targets.map((t) => t.workload))];
  const systemOrder = [
    'bare Koa',
    'bare Koa + work',
    'Koa + duties',
    'raw better-sqlite3',
    'raw better-sqlite3, same rows',
    'Folio',
    FOLIO_UNCACHED,
    'json-server',
    'pouchdb-server',
    'Parse Server',
  ];
  rows.sort(
    (a, b) =>
      workloadOrder.indexOf(a.workload) - workloadOrder.indexOf(b.workload) ||
      systemOrder.indexOf(a.system) - systemOrder.indexOf(b.system) ||
      (a.workMicros ?? 0) - (b.workMicros ?? 0),
  );
  const systemName = (r: (typeof rows)[number]) =>
    r.workMicros === undefined ? r.system : `bare Koa + ${r.workMicros} µs of CPU`;
  const rps = (system: string, workload: string) =>
    rows.find((r) => r.system === system && r.workload === workload)?.requestsPerSecond ?? Number.NaN;
  const lines = [
    '| system | workload | req/s (median) | req/s spread | × bare Koa | server CPU µs/req | CPU spread | of it in the kernel | of it on the main thread | p50 ms | p99 ms | non-2xx |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |',
    ...rows.map(
      (r) =>
        `| ${systemName(r)} | ${r.workload} | ${r.requestsPerSecond.toFixed(0)} | ${percent(spread(r.rounds.map((x) => x.requestsPerSecond)))} | ${(r.requestsPerSecond / rps('bare Koa', r.workload)).toFixed(3)} | ${Number.isFinite(r.cpuMicrosPerRequest) ? r.cpuMicrosPerRequest.toFixed(1) : 'n/a'} | ${percent(spread(r.rounds.map((x) => x.cpuMicrosPerRequest)))} | ${percent(r.kernelShare)} | ${percent(r.mainThreadShare)} | ${r.p50Ms} | ${r.p99Ms} | ${r.non2xx + r.errors} |`,
    ),
  ];
  // Folio's throughput over each other system's, workload by workload ("n/a": no equivalent).
  const others = [
    'bare Koa',
    'Koa + duties',
    'raw better-sqlite3',
    RAW_ROWS,
    'json-server',
    'pouchdb-server',
    'Parse Server',
  ];
  const workloads = [...new Set(rows.map((r) => r.workload))];
  const versus = [
    `| workload | ${others.map((o) => `Folio ÷ ${o}`).join(' | ')} |`,
    `| --- | ${others.map(() => '---:').join(' | ')} |`,
    ...workloads.map((w) => {
      const cells = others.map((o) => {
        const ratio = rps('Folio', w) / rps(o, w);
        return Number.isFinite(ratio) ? ratio.toFixed(2) : 'n/a';
      });
      return `| ${w} | ${cells.join(' | ')} |`;
    }),
  ];
  // The project's targets (bench/storageTargets.ts), as ratios of the same run.
  const ofBareKoa = (system: string, workload: string) => rps(system, workload) / rps('bare Koa', workload);
  const lookup: Lookup = (system, workload) =>
    rows.find((r) => r.system === system && r.workload === workload);
  const verdicts = judgeTargets(lookup);
  versus.push(
    '',
    '| target (median of the rounds) | measured | met |',
    '| --- | ---: | --- |',
    ...verdicts.map(verdictLine),
  );
  // Not targets: Folio's writes beside a raw server writing the same rows (document, the version it
  // replaces, change).
  const sameRows = ['POST create', 'PATCH merge'].flatMap((workload) => {
    const folio = lookup('Folio', workload);
    const rows = lookup(RAW_ROWS, workload);
    return folio && rows
      ? [
          `| ${workload} | ${(folio.cpuMicrosPerRequest / rows.cpuMicrosPerRequest).toFixed(2)} | ${(folio.requestsPerSecond / rows.requestsPerSecond).toFixed(2)} |`,
        ]
      : [];
  });
  if (sameRows.length > 0)
    versus.push(
      '',
      `Beside ${RAW_ROWS} (no target: the ceiling of a store that keeps each document's versions and change events, written in its transaction, as Folio does):`,
      '',
      '| workload | Folio ÷ it, CPU per request | Folio ÷ it, req/s |',
      '| --- | ---: | ---: |',
      ...sameRows,
    );
  // The same list and count with every answer from SQLite: what a collection written between
  // two reads costs, and how much of Folio's figure above is its query cache.
  const uncached = rows
    .filter((r) => r.system === FOLIO_UNCACHED)
    .flatMap((r) => {
      const raw = lookup('raw better-sqlite3', r.workload);
      const cachedFolio = lookup('Folio', r.workload);
      if (!raw || !cachedFolio) return [];
      return [
        `| ${r.workload} | ${(r.cpuMicrosPerRequest / raw.cpuMicrosPerRequest).toFixed(2)} | ${(r.requestsPerSecond / raw.requestsPerSecond).toFixed(2)} | ${(cachedFolio.cpuMicrosPerRequest / r.cpuMicrosPerRequest).toFixed(2)} |`,
      ];
    });
  if (uncached.length > 0)
    versus.push(
      '',
      `${FOLIO_UNCACHED} (no target: every page and count asked of SQLite, as on a collection written between two reads):`,
      '',
      '| workload | it ÷ raw better-sqlite3, CPU per request | it ÷ raw better-sqlite3, req/s | Folio (cache on) ÷ it, CPU per request |',
      '| --- | ---: | ---: | ---: |',
      ...uncached,
    );
  if (parseSkipped) versus.push('', `Parse Server: ${parseSkipped}.`);
  // What each target ratio stands for in µs of work per request (bench/workBudget.ts).
  const budgets = BARE_KOA_TARGETS.map(([workload, goal]) => {
    const levels = rows
      .filter((r) => r.workload === workload && r.workMicros !== undefined)
      .map((r) => ({
        workMicros: r.workMicros ?? 0,
        ratio: r.requestsPerSecond / rps('bare Koa', workload),
      }));
    return {
      workload,
      levels,
      targetRatio: goal,
      allowed: equivalentWork(goal, levels),
      duties: equivalentWork(ofBareKoa('Koa + duties', workload), levels),
      folio: equivalentWork(ofBareKoa('Folio', workload), levels),
    };
  });
  // "≈" marks a figure read beyond the highest level.
  const micros = ({ micros, extrapolated }: WorkEstimate) =>
    Number.isFinite(micros) ? `${extrapolated ? '≈ ' : ''}${micros.toFixed(0)}` : 'n/a';
  const budget = [
    '| workload | bare Koa + work, × bare Koa | target | work the target allows, µs/req | Koa + duties adds, µs/req | Folio adds, µs/req |',
    '| --- | --- | ---: | ---: | ---: | ---: |',
    ...budgets.map(
      (b) =>
        `| ${b.workload} | ${b.levels.map((l) => `${l.workMicros} µs: ${l.ratio.toFixed(3)}`).join(', ') || 'n/a'} | ${b.targetRatio} × | ${micros(b.allowed)} | ${micros(b.duties)} | ${micros(b.folio)} |`,
    ),
  ];
  // Where the time of each missed target goes (a profiled server, after the rounds).
  const missedSection = missedProfilesSection(
    verdicts,
    oneShotVerdicts(folioSide, baselines),
    profiles,
    (folioSide.transfer?.profiles ?? {}) as Record<string, ProfileSummary>,
    {
      peers: notProfiled,
      oneShot:
        typeof folioSide.transfer?.profileError === 'string' ? folioSide.transfer.profileError : undefined,
    },
  );
  const out = process.stdout;
  out.write(
    `\nFolio beside its peers (${CONNECTIONS} connections, ${ROUNDS} × ${SECONDS} s rounds, median)\n`,
  );
  const oneShot = baselineTable(folioSide, baselines);
  out.write(
    `${lines.join('\n')}\n\n${versus.join('\n')}\n\n${budget.join('\n')}\n\n${oneShot.join('\n')}\n\n${live.join('\n')}\n\n${missedSection.join('\n')}\n`,
  );
  // Every profiled workload in a line, met or not: its busy time and largest areas.
  for (const [workload, summary] of profiles) out.write(`${profileLine(workload, summary)}\n`);
  if (process.env.PEERS_WRITE === '0') return;
  const when = new Date().toISOString();
  const setup = {
    connections: CONNECTIONS,
    secondsPerRound: SECONDS,
    rounds: ROUNDS,
    warmupSeconds: WARMUP_SECONDS,
    workLevelsMicros: WORK_LEVELS_US,
    jsonServer: JSON_SERVER_VERSION,
    pouchdbServer: POUCHDB_SERVER_VERSION,
  };
  await writeFile(
    join(ROOT, 'docs/performance.json'),
    `${JSON.stringify({ when, machine: machine(), load: loadAverage(), setup, rows, budgets, folioSide, baselines }, null, 2)}\n`,
  );
  // The whole `npm run bench`, from its first workload to this report (its target: ~10 min).
  const took = timing === undefined ? '' : tookText(timing);
  await writeFile(
    join(ROOT, 'docs/performance.md'),
    markdown(
      when,
      lines,
      versus,
      budget,
      [...oneShot, '', ...liveText(), ...live],
      missedSection,
      await growthSection(),
      took,
      // Each report's findings, newest first, kept by hand in a file of their own.
      await readFile(join(ROOT, 'bench/reportHistory.md'), 'utf8'),
    ),
  );
}

/**
 * The last `npm run bench:scale` report (docs/performance-scale.md) without its title, for this
 * report's growth section; a line saying how to make one when there is none.
 */
async function growthSection(): Promise<string[]> {
  const text = await readFile(join(ROOT, 'docs/performance-scale.md'), 'utf8').catch(() => null);
  if (text === null) return ['Not measured yet: `npm run bench:scale` writes docs/performance-scale.md.'];
  return text
    .replace(/^# .*\n/, '')
    .trim()
    .split('\n');
}

/** " The whole `npm run bench` took 10.2 min (queries 1.1, …)." for the report. */
export function tookText(timing: BenchTiming, nowMs = performance.now()): string {
  const minutes = (ms: number) => (ms / 60_000).toFixed(1);
  const parts = timing.phases.map(([name, ms]) => `${name} ${minutes(ms)}`).join(', ');
  return ` The whole \`npm run bench\` took ${minutes(nowMs - timing.startedMs)} min (${parts}).`;
}

/** The machine's load average (1, 5, 15 min) when the report is written: others' work shows here. */
function loadAverage(): string {
  return loadavg()
    .map((l) => l.toFixed(2))
    .join(', ');
}

function markdown(
  when: string,
  table: string[],
  versus: string[],
  budget: string[],
  oneShot: string[],
  missed: string[],
  growth: string[],
  took: string,
  history: string,
): string {
  return `# Performance beside peers

Written by \`npm run bench\` (its last part; \`npm run bench:peers\` runs the throughput part
alone, with "n/a" for the one-shot figures of Folio and raw better-sqlite3); the raw figures of
every round are in [performance.json](performance.json). Run it on your own machine: the ratios are what carries
over, not the absolute numbers.

**Machine**: ${machine()}. Measured ${when}; load average when the report was written
${loadAverage()} (1, 5, 15 min; on a shared machine other work lowers every system alike,
which is why only ratios of one run are compared).${took}

**Method**: each system runs in a process of its own; the load comes from a third process
(autocannon, keep-alive, ${CONNECTIONS} connections). Each target is warmed up for
${WARMUP_SECONDS} s, then measured in ${ROUNDS} rounds of ${SECONDS} s taken in turn across
all targets (so a noisy moment spreads over all of them); the median round is reported.
Server CPU is the process's user and system time from /proc (all its threads) over the round,
per answered request; *of it in the kernel* is the system time's part of it (socket and file
writes, page faults), so a server whose CPU moves between runs shows whether it moved in its own
code or in the kernel; *of it on the main thread* is the part its main thread ran (its
JavaScript; not worker threads, libuv's pool or the garbage collector's helpers; n/a for a
server of several processes), which tells the server's own request path from its background
work.

- **bare Koa**: Koa with a router and a JSON body parser answering a constant document, the
  same bytes Folio answers for a document (and for the list and count workloads, the same
  bytes Folio answers to them): the HTTP ceiling on this machine.
- **bare Koa + N µs of CPU**: the same server burning N µs of CPU time per request before it
  answers (N = ${WORK_LEVELS_US.get.join(' and ')} on GET, ${WORK_LEVELS_US.post.join(' and ')}
  on POST): the calibration of the section below.
- **Koa + duties**: bare Koa plus what any multi-tenant store must do per request before it
  touches data, done as cheaply as it can be (\`bench/dutiesKoa.ts\`): a SHA-256 of the API key
  and a Map look-up, a rate-limit count, a request id, one access-log line (formatted and
  written as Folio's: pino's asynchronous destination, in batches) to a file, and the request-id, rate-limit
  and ETag headers; no store. The ceiling of Folio's GET
  and POST on Koa with those duties kept.
- **raw better-sqlite3**: bare Koa over better-sqlite3 on the same rows, WAL and
  \`synchronous=FULL\` as Folio's default: one prepared statement (a transaction for PATCH,
  bulk and import) per request, no auth, versions, change log or validation. The storage
  ceiling under Folio's GET, POST and PATCH.
- **raw better-sqlite3, same rows**: the same server writing, for POST and PATCH, the rows
  Folio writes (\`/rows\` routes): the document in Folio's table with its three indexes (body
  stored as JSONB, with its current version's operation and key hint), the version it replaces
  copied to the version table (a create has none) with those past the Team plan's 100 pruned, and
  a change row with its two indexes, in one transaction and one sync per request. Still no auth,
  validation, rate limit, log, cache or change feed. New documents get Folio's time-ordered ids,
  so each insert lands at the end of the keys as Folio's do. Not a target: it shows how much of Folio's
  write cost is the history and outbox it keeps.
- **Folio**: \`folio serve\` on the embedded store, as in production: request log at \`info\`
  (to a file), API-key auth and the Team plan's rate limit on every request. Requests spread
  over a pool of ${KEY_POOL} keys, and the plan's per-key limit is raised by configuration
  (\`FOLIO_PLANS_TEAM_REQUESTS_PER_SECOND=${RATE_LIMIT}\`) so it never caps the measurement:
  at the default 200 per second, ${KEY_POOL} keys cap it at ${KEY_POOL * 200} requests per
  second, which a fast machine passes; the limiter still counts every request. GET and PATCH go to the ${SEED_DOCS} documents in turn; on every
  system the PATCH (a merge patch, \`{"n": …, "price": 13.5}\`) sets \`n\` to a new number each
  time, so it always changes the document (an unchanged row costs SQLite no write and no sync); POST
  creates a document (with its first version record and change event in the same
  transaction). The list (\`filter[category]=…&sort=price&limit=20\`) and count
  (\`count=true&filter[category]=…\`) run over a collection of 100,000 documents (500
  categories of 200) with a declared index on (category, price); the raw server has the same
  expression index. The list's \`meta.total\` is exact by default (a count of the category's
  matches), which raw better-sqlite3 does not compute; the row "no total" is the same page with
  \`total=none\`, the same storage work as raw's page (measured again beside it). The list and
  count repeat 500 questions over a collection nobody writes during the run, so Folio answers
  them from its query cache (\`FOLIO_EMBEDDED_QUERY_CACHE_MB\`: a page's or count's answer kept
  until the collection is next written), as it would a catalogue read far more often than
  written.
- **Folio, no query cache**: a second \`folio serve\` with \`FOLIO_EMBEDDED_QUERY_CACHE_MB=0\`
  over its own copy of the 100,000 documents and the same declared index: every list page and
  count asks SQLite, as on a collection written between two reads. Not a target; it shows the
  cost of a miss.
- **json-server ${JSON_SERVER_VERSION}**: installed from npm into a temporary folder at bench
  time (not a dependency of Folio), on a \`db.json\` holding ${SEED_DOCS} documents of the same
  shape; \`GET /items/{id}\`, \`POST /items\`, \`PATCH /items/{id}\`, default options (it logs
  each request too). The list (\`?category=…&_sort=price&_limit=20\`) and count
  (\`?category=…&_limit=0\`, whose \`X-Total-Count\` is the count) go to a second json-server
  over the 100,000 rows, so its writes never rewrite a 100,000-row file.
- **pouchdb-server ${POUCHDB_SERVER_VERSION}** (the CouchDB API over PouchDB): installed the
  same way, data on disk (LevelDB), a database of ${SEED_DOCS} documents of the same shape;
  \`GET /items/{id}\` and \`POST /items\`. Its "list" is \`_all_docs?include_docs=true&limit=20\`
  from a key in turn: a page in id order, the nearest it has without a view or an index
  (no filter, no sort on a field); it has no merge patch and no filtered count ("n/a").
- **Parse Server ${PARSE_SERVER_VERSION}.x on PostgreSQL** (\`bench/workloads/parseServer.ts\`):
  the open-source Node backend a team would weigh against Folio. Installed from npm into the
  temporary folder at bench time; PostgreSQL is Debian's \`postgresql\` package, a throw-away
  cluster made in the temporary folder with \`fsync\` on and removed after (skipped, with the
  reason, where PostgreSQL is not installed). \`GET /parse/classes/Item/{id}\`,
  \`POST /parse/classes/Item\`, \`PUT /parse/classes/Item/{id}\` (Parse's update sets the
  given fields: a merge), \`GET /parse/classes/Big?where={"category":…}&order=price&limit=20\`
  and \`…&count=1&limit=0\` over the same 100,000 rows with a btree index on
  (category, price). Its CPU per request is Parse's node process and every PostgreSQL process
  of the cluster together.

${table.join('\n')}

${versus.join('\n')}

## What the targets mean in microseconds

A ratio against bare Koa is not a budget of CPU: on a machine the load generator shares, each
µs a server adds per request costs more than a µs of throughput, because a slower server
wakes the generator for every response and answers in smaller batches. The runs of bare Koa
burning a fixed amount of CPU per request measure that here. The slowdown 1 / ratio − 1 rises
with the added work; a ratio between two levels (bare Koa itself is the first, at 0) stands for
the work between them, read off the line joining them (\`bench/workBudget.ts\`; "≈" marks a
figure read beyond the highest level). *Work the target allows* is how much a server may add
to bare Koa per request and still meet the target; the last two columns are what Koa + duties
and Folio add, read the same way.

${budget.join('\n')}

## One-shot workloads

Folio's figures come from the parts of \`npm run bench\` that measure them in detail (import,
export and bulk: \`bench/transfer.ts\`, Folio in its own process; change streams:
\`bench/streams.ts\`; webhooks: \`bench/webhooks.ts\`), run in the same \`npm run bench\` just
before this part. raw better-sqlite3's import, export and bulk are measured there too, in turn
with Folio's, round for round (a Folio import, then raw's; a Folio bulk request, then raw's), so
a slower disk or a busy neighbour in one minute weighs on both sides of a ratio; pouchdb-server's
are measured here. Folio's bulk mixes 40 PUT, 30 PATCH, 20 POST and 10 DELETE, each with its
version record and change event; raw better-sqlite3 applies the same 100 operations in one
transaction to a table of (id, body) (a PUT is an upsert, a PATCH reads, merges and updates),
and, beside it, writes Folio's rows for them (a DELETE moves the document and its history to
the trash tables). pouchdb-server's \`_bulk_docs\` inserts 100 documents.
raw better-sqlite3 imports CSV with papaparse (header row, dynamic typing, dotted headers
nested, JSON cells parsed: the same documents as Folio's CSV import stores). The rows "beside
raw writing Folio's rows" are the same server writing, for each document, the document, its
version and its change row, all in one transaction (no target: the ceiling of a store that
keeps a history and an outbox). Change streams and webhooks have no equivalent in the
baselines ("n/a"). Every system imports and exports three times (each import into a
collection, table or database of its own) and sends 100 bulk requests after 50 that warm it up;
each figure is the median, and the last column is how far the rounds spread (the largest
minus the smallest, over the median).

${oneShot.join('\n')}

## Where the time goes, where a target is missed

After the measurements, a fresh \`folio serve\` over the same data runs each workload again with
V8's profiler on (\`--cpu-prof\`): each of Folio's throughput workloads for ${PROFILE_SECONDS} s after a
${WARMUP_SECONDS} s warm-up, under the same load (\`bench/peers.ts\`), and, in \`bench/transfer.ts\`,
${PROFILE_BULK_REQUESTS} bulk requests after ${PROFILE_BULK_REQUESTS} unprofiled, an import of each format and an export after one of
each unprofiled. Only the window of each workload counts, cut on the profile's own clock
(\`bench/cpuProfile.ts\`). A sample stands for the time until the next; *busy* is every sample
but the idle event loop, on the main thread only. The profiler costs time of its own, so the
µs here run above the measured figures; the shares are what to read. better-sqlite3's statements
have no frame of their own in these profiles: a statement's time is its caller's, in
\`src/store/embedded\`, and better-sqlite3's transaction wrapper holds BEGIN and COMMIT, with the
COMMIT's sync to disk. *native functions* are those with no script, Node's bindings mostly
(\`writev\` is a response's socket write, with the kernel's loopback TCP that delivers it to the
load generator); *native, outside JavaScript* is V8's \`(program)\`: the event loop, the HTTP
parser, and the like.

${missed.join('\n').trimEnd()}

## As a collection grows

From the last \`npm run bench:scale\` (\`bench/scale.ts\`; not part of this run, since seeding
1,000,000 documents takes minutes), as [performance-scale.md](performance-scale.md) held it when
this report was written:

${growth.join('\n')}

## Reading these numbers

${history.trimEnd()}
`;
}

/**
 * What `npm run bench` hands this part when it runs it in a process of its own (PEERS_HANDOFF,
 * a JSON file): the one-shot figures, and how long the run and its parts took so far.
 */
export interface PeerHandoff {
  folioSide: FolioSide;
  elapsedMs: number;
  phases: Array<[string, number]>;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const file = process.env.PEERS_HANDOFF;
  const handed = file ? (JSON.parse(await readFile(file, 'utf8')) as PeerHandoff) : null;
  const timing = handed
    ? { startedMs: performance.now() - handed.elapsedMs, phases: handed.phases }
    : undefined;
  await runPeerBench(handed?.folioSide ?? {}, timing);
  if (timing) process.stdout.write(`\n${tookText(timing).trim()}\n`);
}
