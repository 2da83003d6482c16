/**
 * The HTTP ceiling for bench/peers.ts: bare Koa with a router and a JSON body parser answering
 * a constant document (BARE_DOC, the same bytes Folio answers) to `GET /docs/:id`,
 * `POST /docs` and `PATCH /docs/:id`, and a constant page (BARE_LIST, the same bytes as
 * Folio's filtered list) or count (BARE_COUNT) to `GET /docs`. No auth, no store, no logging:
 * what Node and Koa cost alone. With BARE_WORK_US, each request first burns that much CPU: the
 * calibration of bench/workBudget.ts.
 */
import { Router } from '@koa/router';
import Koa from 'koa';
import { koaBody } from 'koa-body';
import { serveForBench } from './listen.js';

const doc = process.env.BARE_DOC ?? '{}';
const list = process.env.BARE_LIST ?? '{"data":[]}';
const count = process.env.BARE_COUNT ?? '{"count":0}';
const workMicros = Number(process.env.BARE_WORK_US ?? 0);
const app = new Koa();
if (workMicros > 0)
  app.use((_ctx, next) => {
    // CPU time, not wall time: a spin the scheduler interrupts still does its full amount.
    const start = process.cpuUsage();
    for (;;) {
      const used = process.cpuUsage(start);
      if (used.user + used.system >= workMicros) break;
    }
    return next();
  });
const router = new Router();
router.get('/docs/:id', (ctx) => {
  ctx.type = 'application/json';
  ctx.body = doc;
});
router.post('/docs', koaBody(), (ctx) => {
  if (typeof ctx.request.body !== 'object') ctx.throw(400);
  ctx.status = 201;
  ctx.type = 'application/json';
  ctx.body = doc;
});
router.patch('/docs/:id', koaBody(), (ctx) => {
  if (typeof ctx.request.body !== 'object') ctx.throw(400);
  ctx.type = 'application/json';
  ctx.body = doc;
});
router.get('/docs', (ctx) => {
  ctx.type = 'application/json';
  ctx.body = ctx.query.count === 'true' ? count : list;
});
app.use(router.routes());
serveForBench(app);
