/**
 * The one test harness for HTTP suites: a real Folio server on an ephemeral port over a real
 * store, and a small fetch-based client. Suites never reach into the store behind the API.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { DestinationStream } from 'pino';
import { type ConfigOverrides, loadConfig } from '../../src/config/load.js';
import { type RunningServer, startServer } from '../../src/server.js';
import type { HostLookup } from '../../src/services/webhooks/targets.js';
import type { Env, KeyRule, KeyScope, Plan } from '../../src/store/port.js';
import { contractChecker } from './contract.js';

export interface ApiResponse<T = Json> {
  status: number;
  headers: Headers;
  body: T;
  text: string;
}

// Test bodies are whatever JSON the server sent; assertions check their shape.
// biome-ignore lint/suspicious/noExplicitAny: response bodies are checked by assertions, not types
export type Json = any;

export interface RequestOptions {
  key?: string;
  session?: string;
  body?: unknown;
  /** Sent as is (not JSON-encoded) when a string. */
  rawBody?: string;
  contentType?: string;
  headers?: Record<string, string>;
}

export interface TestServer {
  url: string;
  running: RunningServer;
  request<T = Json>(method: string, path: string, options?: RequestOptions): Promise<ApiResponse<T>>;
  /** A fresh account with a project and a read-write test key. */
  tenant(options?: { plan?: Plan; project?: string }): Promise<Tenant>;
  close(): Promise<void>;
}

export interface Tenant {
  email: string;
  session: string;
  project: string;
  /** The read-write test key. */
  key: string;
  newKey(options?: {
    env?: Env;
    scope?: KeyScope;
    name?: string;
    /** The key's rules (docs/keys.md); none by default. */
    rules?: KeyRule[] | null;
  }): Promise<{ rawKey: string; id: string }>;
}

let tenantCounter = 0;

/**
 * Rate limits high enough that suites other than the rate-limit suite never meet them; that
 * suite passes `realRateLimits` to keep the plan numbers.
 */
const RELAXED_RATE_LIMITS: ConfigOverrides = {
  plans: {
    free: { requestsPerSecond: 1_000_000 },
    pro: { requestsPerSecond: 1_000_000 },
    team: { requestsPerSecond: 1_000_000 },
  },
};

/**
 * Sign-in throttles high enough for suites that sign up many tenants from one address; the
 * sign-in throttle suite sets its own numbers through `config`.
 */
const RELAXED_SIGN_IN: ConfigOverrides = {
  auth: {
    loginFailuresPerAccount: 1_000_000,
    loginFailuresPerAddress: 1_000_000,
    signupsPerAddress: 1_000_000,
  },
};

export interface TestServerOptions {
  config?: ConfigOverrides;
  realRateLimits?: boolean;
  /** Receives the server's log lines at level `info` (default: no logging). */
  logStream?: DestinationStream;
  /** Run on this data directory and leave it in place (restart tests); default: a fresh temp dir. */
  dataDir?: string;
  /** How webhook host names resolve (default: the system resolver). */
  lookup?: HostLookup;
  /** false: responses go unchecked against the OpenAPI document (benchmarks time the server alone). */
  contract?: boolean;
}

export async function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  const dataDir = options.dataDir ?? (await mkdtemp(join(tmpdir(), 'folio-test-')));
  const config = loadConfig({}, [
    {
      port: 0,
      host: '127.0.0.1',
      dataDir,
      bootstrap: false,
      logLevel: options.logStream ? 'info' : 'silent',
    },
    options.realRateLimits ? {} : RELAXED_RATE_LIMITS,
    RELAXED_SIGN_IN,
    options.config ?? {},
  ]);
  const running = await startServer(config, options.logStream, { lookup: options.lookup });
  // Every response any test receives from this server is checked against the OpenAPI document.
  if (options.contract !== false) contractChecker().watch(running.httpServer);

  async function request<T = Json>(
    method: string,
    path: string,
    options: RequestOptions = {},
  ): Promise<ApiResponse<T>> {
    const headers: Record<string, string> = { ...options.headers };
    const token = options.key ?? options.session;
    if (token) headers.Authorization = `Bearer ${token}`;
    let body: string | undefined;
    if (options.rawBody !== undefined) body = options.rawBody;
    else if (options.body !== undefined) body = JSON.stringify(options.body);
    if (body !== undefined) headers['Content-Type'] = options.contentType ?? 'application/json';
    const res = await fetch(`${running.url}${path}`, { method, headers, body });
    const text = await res.text();
    let parsed: unknown = text;
    const type = res.headers.get('content-type') ?? '';
    // NDJSON is several documents: a suite reads its text.
    if (type.includes('json') && !type.includes('ndjson') && text) parsed = JSON.parse(text);
    return { status: res.status, headers: res.headers, body: parsed as T, text };
  }

  async function tenant(options: { plan?: Plan; project?: string } = {}): Promise<Tenant> {
    tenantCounter += 1;
    const email = `user${tenantCounter}-${Date.now()}@example.test`;
    const signup = await request('POST', '/api/auth/signup', {
      body: { email, password: 'correct horse battery' },
    });
    if (signup.status !== 201) throw new Error(`signup failed: ${signup.status} ${signup.text}`);
    const session: string = signup.body.token;
    if (options.plan && options.plan !== 'free') {
      const res = await request('PATCH', '/api/account', { session, body: { plan: options.plan } });
      if (res.status !== 200) throw new Error(`plan change failed: ${res.text}`);
    }
    const project = options.project ?? 'app';
    const created = await request('POST', '/api/projects', { session, body: { name: project } });
    if (created.status !== 201) throw new Error(`project failed: ${created.text}`);
    const newKey: Tenant['newKey'] = async ({
      env = 'test',
      scope = 'read-write',
      name = 'test key',
      rules = null,
    } = {}) => {
      const res = await request('POST', '/api/keys', {
        session,
        body: { project, name, env, scope, rules },
      });
      if (res.status !== 201) throw new Error(`key failed: ${res.status} ${res.text}`);
      return { rawKey: res.body.rawKey, id: res.body.apiKey.id };
    };
    const { rawKey } = await newKey();
    return { email, session, project, key: rawKey, newKey };
  }

  return {
    url: running.url,
    running,
    request,
    tenant,
    async close() {
      await running.close();
      if (!options.dataDir) await rm(dataDir, { recursive: true, force: true });
    },
  };
}
