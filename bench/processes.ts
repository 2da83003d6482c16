/**
 * The servers the bench measures, each a node process of its own (its CPU and memory its own), its
 * output in a log file where its URL is read. With BENCH_PROFILE_DIR (`npm run bench -- --profile`)
 * every `folio serve` runs under V8's profiler and leaves its `.cpuprofile` there.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, open, readFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { cpus, freemem, release, totalmem, type } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = fileURLToPath(new URL('../', import.meta.url));

export interface Server {
  name: string;
  url: string;
  child: ChildProcess;
}

/** Start `node args` with `env`; resolves once its log (`logFile`) shows a URL. */
export async function startProcess(
  name: string,
  args: string[],
  env: Record<string, string>,
  logFile: string,
  urlPattern = /listening on (\S+)/,
  cwd = ROOT,
): Promise<Server> {
  const log = await open(logFile, 'w');
  const child = spawn(process.execPath, args, {
    cwd,
    env: { ...process.env, ...env },
    stdio: ['ignore', log.fd, log.fd],
  });
  await log.close();
  const deadline = Date.now() + 120_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${name} exited: ${await readFile(logFile, 'utf8')}`);
    const url = urlPattern.exec(await readFile(logFile, 'utf8'))?.[1];
    if (url) return { name, url, child };
    if (Date.now() > deadline) throw new Error(`${name} did not start`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function stop(server: Server): Promise<void> {
  const { child } = server;
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = once(child, 'exit');
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/**
 * `folio serve` as in production, data in `dir/tag`: request log at info (to its log file),
 * the Team plan's rate limit raised so that it counts every request but never caps the load.
 */
export async function startFolio(
  dir: string,
  tag: string,
  env: Record<string, string> = {},
): Promise<Server> {
  const profileDir = process.env.BENCH_PROFILE_DIR;
  if (profileDir) await mkdir(profileDir, { recursive: true });
  const profile = profileDir ? ['--cpu-prof', `--cpu-prof-dir=${profileDir}`] : [];
  return startProcess(
    `folio serve (${tag})`,
    [...profile, 'bin/folio.js', 'serve'],
    {
      PORT: '0',
      HOST: '127.0.0.1',
      FOLIO_DATA_DIR: join(dir, tag),
      FOLIO_BOOTSTRAP: 'false',
      FOLIO_LOG_LEVEL: 'info',
      FOLIO_PLANS_TEAM_REQUESTS_PER_SECOND: '1000000',
      // The throughput's pools: 100 keys, and as many restricted ones.
      FOLIO_PLANS_TEAM_ACTIVE_KEYS: '1000',
      ...env,
    },
    join(dir, `${tag}.log`),
  );
}

/** raw better-sqlite3 (bench/workloads/rawSqlite.ts), its database in `dir`. */
export function startRaw(dir: string, env: Record<string, string> = {}): Promise<Server> {
  return startProcess(
    'raw better-sqlite3',
    ['--import', 'tsx', 'bench/workloads/rawSqlite.ts'],
    { RAW_DB_DIR: dir, ...env },
    join(dir, 'raw.log'),
  );
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

/** A request's answer as text; throws unless it succeeded. */
export async function call(
  url: string,
  init: { method?: string; body?: unknown; key?: string; type?: string } = {},
): Promise<string> {
  const headers: Record<string, string> = { 'Content-Type': init.type ?? 'application/json' };
  if (init.key) headers.Authorization = `Bearer ${init.key}`;
  const body =
    typeof init.body === 'string' || init.body === undefined ? init.body : JSON.stringify(init.body);
  const method = init.method ?? (body === undefined ? 'GET' : 'POST');
  const res = await fetch(url, { method, headers, body });
  const text = await res.text();
  if (res.status >= 300) throw new Error(`${method} ${url}: ${res.status} ${text.slice(0, 300)}`);
  return text;
}

/** An account on `plan` with a project `bench` and `keys` read-write keys. */
export async function folioTenant(
  url: string,
  email: string,
  plan: 'team' | 'pro',
  keys = 1,
): Promise<string[]> {
  const signup = await call(`${url}/api/auth/signup`, { body: { email, password: PASSWORD } });
  const session = (JSON.parse(signup) as { token: string }).token;
  await call(`${url}/api/account`, { method: 'PATCH', body: { plan }, key: session });
  await call(`${url}/api/projects`, { body: { name: 'bench' }, key: session });
  return benchKeys(url, email, keys);
}

/** `count` more keys of the account's `bench` project, with `rules` (docs/keys.md; null: none). */
export async function benchKeys(url: string, email: string, count: number, rules: unknown = null) {
  const login = await call(`${url}/api/auth/login`, { body: { email, password: PASSWORD } });
  const session = (JSON.parse(login) as { token: string }).token;
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const body = { project: 'bench', name: `bench ${i}`, env: 'test', scope: 'read-write', rules };
    out.push(
      (JSON.parse(await call(`${url}/api/keys`, { body, key: session })) as { rawKey: string }).rawKey,
    );
  }
  return out;
}

const PASSWORD = 'correct horse battery';

export function machine(): string {
  const cpu = cpus();
  const gib = (bytes: number) => (bytes / 2 ** 30).toFixed(1);
  return `${cpu.length} × ${cpu[0]?.model ?? 'unknown CPU'}, ${gib(totalmem())} GiB RAM (${gib(freemem())} GiB free), ${type()} ${release()}, Node ${process.version}`;
}
