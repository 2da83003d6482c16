/**
 * A second ceiling for bench/peers.ts: bare Koa (bareKoa.ts) plus the per-request duties any
 * multi-tenant store serving API keys must do before it touches data, done as cheaply as they can
 * be: a SHA-256 of the bearer key and a Map look-up, a fixed-window rate-limit count, a request id,
 * one access-log line formatted as Folio formats it and written as Folio writes it (batched,
 * src/logDestination.ts) to a file, and the request-id,
 * rate-limit and ETag headers. No store, no validation. What Folio's GET and POST could reach at
 * best on Koa with its duties kept; the rest of Folio's gap is its own code and its store.
 */
import { createHash, randomBytes } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Router } from '@koa/router';
import Koa from 'koa';
import { koaBody } from 'koa-body';
import { formatAccessLine, processBindings } from '../src/http/accessLine.js';
import { logDestination } from '../src/logDestination.js';
import { serveForBench } from './listen.js';

const doc = process.env.BARE_DOC ?? '{}';
const LIMIT = 1_000_000;
const log = logDestination().stream;
const bindings = processBindings();
const keys = new Map<string, string>();
const windows = new Map<string, { count: number; resetAtMs: number }>();
const prefix = randomBytes(6).toString('hex');
let sequence = 0;

const app = new Koa();
app.use(async (ctx, next) => {
  const requestId = `${prefix}${(sequence++).toString(36)}`;
  const started = performance.now();
  ctx.set('X-Request-Id', requestId);
  try {
    await next();
  } finally {
    log.write(
      formatAccessLine(bindings, Date.now(), {
        requestId,
        method: ctx.method,
        path: ctx.path,
        status: ctx.status,
        ms: performance.now() - started,
        key: ctx.state.keyId,
      }),
    );
  }
});
app.use((ctx, next) => {
  const raw = ctx.get('authorization').slice('Bearer '.length);
  const hash = createHash('sha256').update(raw).digest('hex');
  let id = keys.get(hash);
  if (id === undefined) {
    id = `key_${keys.size}`;
    keys.set(hash, id);
  }
  ctx.state.keyId = id;
  const now = Date.now();
  let window = windows.get(id);
  if (!window || now >= window.resetAtMs) {
    window = { count: 0, resetAtMs: now + 1000 };
    windows.set(id, window);
  }
  window.count += 1;
  if (window.count > LIMIT) ctx.throw(429);
  ctx.set('X-RateLimit-Limit', String(LIMIT));
  ctx.set('X-RateLimit-Remaining', String(LIMIT - window.count));
  ctx.set('X-RateLimit-Reset', String(Math.ceil(window.resetAtMs / 1000)));
  return next();
});
const router = new Router();
router.get('/docs/:id', (ctx) => {
  ctx.set('ETag', '"1"');
  ctx.type = 'application/json';
  ctx.body = doc;
});
router.post('/docs', koaBody(), (ctx) => {
  if (typeof ctx.request.body !== 'object') ctx.throw(400);
  ctx.status = 201;
  ctx.set('ETag', '"1"');
  ctx.type = 'application/json';
  ctx.body = doc;
});
app.use(router.routes());
serveForBench(app);
