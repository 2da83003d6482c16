/**
 * Folio beside its peers, in one run on one machine, so the ratios hold however noisy it is:
 * bare Koa answering a constant document of the same bytes (the HTTP ceiling), Folio on the
 * embedded store, json-server and pouchdb-server (both installed from npm into a temporary
 * folder, never dependencies of Folio), on GET by id and POST create.
 *
 * Every server runs in a process of its own; the load comes from this process (autocannon,
 * keep-alive, fixed connections). Each target is warmed up, then measured in rounds taken in
 * turn across targets (noise spreads over all of them), and the median round is reported.
 * Folio runs as `folio serve` would in production: access log on (to a file), the plan's rate
 * limits on, requests spread over a pool of keys so the per-key limit never caps them.
 *
 * Writes docs/performance.md and docs/performance.json. Options (env): PEERS_CONNECTIONS (32),
 * PEERS_SECONDS per round (5), PEERS_ROUNDS (3), PEERS_WARMUP_SECONDS (2), PEERS_ONLY
 * (comma-separated target names, e.g. `folio-get`), PEERS_WRITE=0 to write no files,
 * PEERS_FOLIO_NODE_ARGS (extra node options for Folio's process, e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof`).
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, open, readFile, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { cpus, freemem, release, tmpdir, totalmem, type } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { promisify } from 'node:util';
import autocannon from 'autocannon';

const ROOT = fileURLToPath(new URL('../', import.meta.url));
const CONNECTIONS = Number(process.env.PEERS_CONNECTIONS ?? 32);
const SECONDS = Number(process.env.PEERS_SECONDS ?? 5);
const ROUNDS = Number(process.env.PEERS_ROUNDS ?? 3);
const WARMUP_SECONDS = Number(process.env.PEERS_WARMUP_SECONDS ?? 2);
const ONLY = process.env.PEERS_ONLY ? new Set(process.env.PEERS_ONLY.split(',')) : null;
const FOLIO_NODE_ARGS = process.env.PEERS_FOLIO_NODE_ARGS?.split(' ').filter(Boolean) ?? [];
const JSON_SERVER_VERSION = '0.17.4';
const POUCHDB_SERVER_VERSION = '4.2.0';
const SEED_DOCS = 1000;
const KEY_POOL = 100;
const BODY = {
  title: 'bench document',
  n: 1,
  price: 12.5,
  tags: ['alpha', 'beta'],
  address: { city: 'Paris' },
};

interface Server {
  name: string;
  url: string;
  child: ChildProcess;
}

interface Target {
  name: string;
  system: 'bare Koa' | 'Folio' | 'json-server' | 'pouchdb-server';
  workload: 'GET by id' | 'POST create';
  options: autocannon.Options;
}

export interface RoundResult {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  errors: number;
}

/** Start `args` with node; resolves once its output (kept in `logFile`) shows a URL. */
async function startProcess(
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

function freePort(): Promise<number> {
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

async function call(
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

async function expectStatus(
  promise: Promise<{ status: number; text: string }>,
  status: number,
): Promise<string> {
  const res = await promise;
  if (res.status !== status)
    throw new Error(`expected ${status}, got ${res.status}: ${res.text.slice(0, 200)}`);
  return res.text;
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

async function measure(target: Target, seconds: number): Promise<RoundResult> {
  const result = await autocannon({ ...target.options, connections: CONNECTIONS, duration: seconds });
  return {
    requestsPerSecond: result.requests.average,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors,
  };
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] as number;
}

export function machine(): string {
  const cpu = cpus();
  const gib = (bytes: number) => (bytes / 2 ** 30).toFixed(1);
  return `${cpu.length} × ${cpu[0]?.model ?? 'unknown CPU'}, ${gib(totalmem())} GiB RAM (${gib(freemem())} GiB free at start), ${type()} ${release()}, Node ${process.version}`;
}

/** json-server from npm, into the temporary folder; its db holds documents of the same shape. */
async function installPeer(dir: string, spec: string): Promise<void> {
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

export async function runPeerBench(): Promise<void> {
  const dir = await mkdtemp(join(tmpdir(), 'folio-peers-'));
  const servers: Server[] = [];
  try {
    // Folio as `folio serve` runs it: request log at info, written to a file.
    const folio = await startProcess(
      'Folio',
      [...FOLIO_NODE_ARGS, 'bin/folio.js', 'serve'],
      {
        PORT: '0',
        HOST: '127.0.0.1',
        FOLIO_DATA_DIR: join(dir, 'data'),
        FOLIO_BOOTSTRAP: 'false',
        FOLIO_LOG_LEVEL: 'info',
      },
      join(dir, 'folio.log'),
      /listening on (\S+)/,
    );
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

    const bare = await startProcess(
      'bare Koa',
      ['--import', 'tsx', 'bench/bareKoa.ts'],
      { BARE_DOC: sample },
      join(dir, 'bare.log'),
      /listening on (\S+)/,
    );
    servers.push(bare);

    const jsonServer = wanted('json-server') ? await startJsonServer(dir) : null;
    if (jsonServer) servers.push(jsonServer);
    const pouch = wanted('pouchdb') ? await startPouchServer(dir) : null;
    if (pouch) servers.push(pouch);

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
    const targets = allTargets.filter((t) => !ONLY || ONLY.has(t.name));

    for (const target of targets) await measure(target, WARMUP_SECONDS);
    const rounds = new Map<string, RoundResult[]>(targets.map((t) => [t.name, []]));
    for (let round = 1; round <= ROUNDS; round++) {
      for (const target of targets) {
        const result = await measure(target, SECONDS);
        rounds.get(target.name)?.push(result);
        process.stdout.write(
          `round ${round} ${target.name.padEnd(18)} ${result.requestsPerSecond.toFixed(0).padStart(7)} req/s  p50 ${result.p50Ms} ms  p99 ${result.p99Ms} ms${result.non2xx || result.errors ? `  non-2xx ${result.non2xx} errors ${result.errors}` : ''}\n`,
        );
      }
    }
    await report(targets, rounds);
  } finally {
    for (const server of servers.reverse()) await stop(server);
    await rm(dir, { recursive: true, force: true });
  }
}

async function report(targets: Target[], rounds: Map<string, RoundResult[]>): Promise<void> {
  const rows = targets.map((t) => {
    const results = rounds.get(t.name) ?? [];
    return {
      name: t.name,
      system: t.system,
      workload: t.workload,
      requestsPerSecond: median(results.map((r) => r.requestsPerSecond)),
      p50Ms: median(results.map((r) => r.p50Ms)),
      p99Ms: median(results.map((r) => r.p99Ms)),
      non2xx: results.reduce((sum, r) => sum + r.non2xx, 0),
      errors: results.reduce((sum, r) => sum + r.errors, 0),
      rounds: results,
    };
  });
  const rps = (system: string, workload: string) =>
    rows.find((r) => r.system === system && r.workload === workload)?.requestsPerSecond ?? Number.NaN;
  const lines = [
    '| system | workload | req/s (median) | × bare Koa | p50 ms | p99 ms | non-2xx |',
    '| --- | --- | ---: | ---: | ---: | ---: | ---: |',
    ...rows.map(
      (r) =>
        `| ${r.system} | ${r.workload} | ${r.requestsPerSecond.toFixed(0)} | ${(r.requestsPerSecond / rps('bare Koa', r.workload)).toFixed(3)} | ${r.p50Ms} | ${r.p99Ms} | ${r.non2xx + r.errors} |`,
    ),
  ];
  const versus = ['json-server', 'pouchdb-server'].flatMap((peer) =>
    ['GET by id', 'POST create'].map(
      (w) => `- Folio ÷ ${peer}, ${w}: ${(rps('Folio', w) / rps(peer, w)).toFixed(2)}`,
    ),
  );
  // The project's targets, as ratios of the same run.
  const goals = [
    ['GET by id ≥ 0.6 × bare Koa', rps('Folio', 'GET by id') / rps('bare Koa', 'GET by id'), 0.6],
    ['POST create ≥ 0.35 × bare Koa', rps('Folio', 'POST create') / rps('bare Koa', 'POST create'), 0.35],
    ['GET by id ≥ 4 × json-server', rps('Folio', 'GET by id') / rps('json-server', 'GET by id'), 4],
    ['POST create ≥ 4 × json-server', rps('Folio', 'POST create') / rps('json-server', 'POST create'), 4],
  ] as const;
  versus.push(
    '',
    '| target | measured | met |',
    '| --- | ---: | --- |',
    ...goals.map(
      ([name, value, goal]) => `| ${name} | ${value.toFixed(3)} | ${value >= goal ? 'yes' : 'no'} |`,
    ),
  );
  const out = process.stdout;
  out.write(
    `\nFolio beside its peers (${CONNECTIONS} connections, ${ROUNDS} × ${SECONDS} s rounds, median)\n`,
  );
  out.write(`${lines.join('\n')}\n${versus.join('\n')}\n`);
  if (process.env.PEERS_WRITE === '0') return;
  const when = new Date().toISOString();
  const setup = {
    connections: CONNECTIONS,
    secondsPerRound: SECONDS,
    rounds: ROUNDS,
    warmupSeconds: WARMUP_SECONDS,
    jsonServer: JSON_SERVER_VERSION,
    pouchdbServer: POUCHDB_SERVER_VERSION,
  };
  await writeFile(
    join(ROOT, 'docs/performance.json'),
    `${JSON.stringify({ when, machine: machine(), setup, rows }, null, 2)}\n`,
  );
  await writeFile(join(ROOT, 'docs/performance.md'), markdown(when, lines, versus));
}

function markdown(when: string, table: string[], versus: string[]): string {
  return `# Performance beside peers

Written by \`npm run bench:peers\` (also the last part of \`npm run bench\`); the raw figures
of every round are in [performance.json](performance.json). Run it on your own machine: the
ratios are what carries over, not the absolute numbers.

**Machine**: ${machine()}. Measured ${when}.

**Method**: each system runs in a process of its own; the load comes from a third process
(autocannon, keep-alive, ${CONNECTIONS} connections). Each target is warmed up for
${WARMUP_SECONDS} s, then measured in ${ROUNDS} rounds of ${SECONDS} s taken in turn across
all targets (so a noisy moment spreads over all of them); the median round is reported.

- **bare Koa**: Koa with a router and a JSON body parser answering a constant document, the
  same bytes Folio answers for a document: the HTTP ceiling on this machine.
- **Folio**: \`folio serve\` on the embedded store, as in production: request log at \`info\`
  (to a file), API-key auth and the Team plan's rate limit on every request. Requests spread
  over a pool of ${KEY_POOL} keys so the per-key limit (200 requests/s) never caps the
  measurement. GET reads one of ${SEED_DOCS} documents in turn; POST creates a document (with
  its first version record and change event in the same transaction).
- **json-server ${JSON_SERVER_VERSION}**: installed from npm into a temporary folder at bench
  time (not a dependency of Folio), on a \`db.json\` holding ${SEED_DOCS} documents of the same
  shape; \`GET /items/{id}\` and \`POST /items\`, default options (it logs each request too).
- **pouchdb-server ${POUCHDB_SERVER_VERSION}** (the CouchDB API over PouchDB): installed the
  same way, data on disk (LevelDB), a database of ${SEED_DOCS} documents of the same shape;
  \`GET /items/{id}\` and \`POST /items\`, default options (it logs each request too).

${table.join('\n')}

${versus.join('\n')}
`;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await runPeerBench();
