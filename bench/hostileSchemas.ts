/**
 * A hostile tenant's schema must not hurt other tenants. Two measurements:
 *
 * 1. Validation time of catastrophic-backtracking patterns (`^(a+)+$`, `^(a|aa)+$`) on a
 *    non-matching string of growing length: Folio's compiled schema (RE2) stays linear, where
 *    JavaScript's own engine doubles with each character (shown on short strings only).
 * 2. Another tenant's POST latency (p50/p99, autocannon) on a real server, alone and while the
 *    hostile tenant keeps sending documents at the worst schema Folio accepts (the patterns,
 *    32 levels of nesting, an enum of 1,000 objects, a 100,000-character string).
 *
 * `node --import tsx bench/hostileSchemas.ts`; HOSTILE_SECONDS (default 5) per phase.
 */
import autocannon from 'autocannon';
import { compileSchema } from '../src/services/schemas/validators.js';
import { hostileSchema } from '../test/support/hostileSchema.js';
import { startTestServer } from '../test/support/server.js';

const SECONDS = Number(process.env.HOSTILE_SECONDS ?? 5);

function timeMs(run: () => void): number {
  const started = performance.now();
  run();
  return performance.now() - started;
}

function patternTimes(): void {
  const validate = compileSchema(
    JSON.stringify({ type: 'object', properties: { s: { type: 'string', pattern: '^(a+)+$' } } }),
  );
  const rows = (head: string, ns: number[], time: (s: string) => string) =>
    console.log(
      `${head}\n| ---: | ---: |\n${ns.map((n) => `| ${n} | ${time(`${'a'.repeat(n)}!`)} |`).join('\n')}`,
    );
  rows('\n1. ^(a+)+$ against a^n + "!"\n| n | Folio (RE2) ms |', [1_000, 10_000, 100_000, 1_000_000], (s) =>
    timeMs(() => validate({ s })).toFixed(2),
  );
  const js = /^(a+)+$/;
  rows('\n| n | JavaScript RegExp ms |', [18, 20, 22, 24], (s) => timeMs(() => js.test(s)).toFixed(1));
}

function nested(depth: number): unknown {
  let schema: unknown = { type: 'string', pattern: '^(a|aa)+$' };
  for (let level = 1; level < depth; level += 2) schema = { properties: { a: schema } };
  return schema;
}

async function latency(
  url: string,
  key: string,
  project: string,
): Promise<{ p50: number; p99: number; rps: number }> {
  const result = await autocannon({
    url: `${url}/${project}/notes`,
    method: 'POST',
    connections: 8,
    duration: SECONDS,
    headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
    body: JSON.stringify({ title: 'hello', n: 1 }),
  });
  return { p50: result.latency.p50, p99: result.latency.p99, rps: result.requests.average };
}

async function isolation(): Promise<void> {
  const config = { plans: { team: { requestsPerSecond: 1_000_000 } } };
  const server = await startTestServer({ contract: false, config });
  try {
    const victim = await server.tenant({ plan: 'team' });
    const attacker = await server.tenant({ plan: 'team' });
    const schema = hostileSchema(nested(29));
    const set = await fetch(`${server.url}/${attacker.project}/evil/_schema`, {
      method: 'PUT',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${attacker.key}` },
      body: JSON.stringify({ schema }),
    });
    if (set.status !== 200) throw new Error(`schema refused: ${set.status} ${await set.text()}`);
    const evil = `${'a'.repeat(100_000)}!`;
    let deep: unknown = evil;
    for (let level = 1; level < 29; level += 2) deep = { a: deep };
    const hostileBody = JSON.stringify({ s: evil, t: evil, e: { k: 999, v: [999, 'x'] }, deep });

    const validate = compileSchema(JSON.stringify(schema));
    const parsed = JSON.parse(hostileBody) as Record<string, never>;
    const perDocument = timeMs(() => {
      for (let i = 0; i < 20; i++) validate(parsed);
    });
    console.log(
      `\nValidating one hostile document (${hostileBody.length} bytes): ${(perDocument / 20).toFixed(2)} ms`,
    );
    const alone = await latency(server.url, victim.key, victim.project);
    let running = true;
    let refused = 0;
    const attack = (async () => {
      while (running) {
        const res = await fetch(`${server.url}/${attacker.project}/evil`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', authorization: `Bearer ${attacker.key}` },
          body: hostileBody,
        });
        await res.text();
        if (res.status === 422) refused++;
      }
    })();
    const attacked = await latency(server.url, victim.key, victim.project);
    running = false;
    await attack;
    console.log('\n2. Another tenant’s POST, 8 connections');
    console.log('| phase | req/s | p50 ms | p99 ms |');
    console.log('| --- | ---: | ---: | ---: |');
    console.log(`| alone | ${alone.rps.toFixed(0)} | ${alone.p50} | ${alone.p99} |`);
    console.log(
      `| beside the hostile tenant | ${attacked.rps.toFixed(0)} | ${attacked.p50} | ${attacked.p99} |`,
    );
    console.log(`\nHostile documents refused (422) meanwhile: ${refused}`);
  } finally {
    await server.close();
  }
}

patternTimes();
await isolation();
