/**
 * docs/performance.md, the one report `npm run bench` writes: how the bench measures, the floors
 * of issue 42 judged on this run, then each part's own tables. One current page: past runs live
 * in git's history of this file, not in it.
 */
import { loadavg } from 'node:os';
import { FLAT_EXPORT_MIB, floorsTable, type Verdict } from './floors.js';
import { machine } from './processes.js';

export interface Part {
  title: string;
  script: string;
  /** The part's own markdown, as it printed it. */
  text: string;
  minutes: number;
}

const METHOD = `## How the bench measures

Every part runs in a process of its own, one after another; the servers whose CPU or memory
is measured run in processes of their own too.

- **Throughput** (\`bench/throughput.ts\`): \`folio serve\` as in production (access log at
  \`info\` to a file, API-key auth and the Team plan's rate limit counting every request, over a
  pool of 100 keys, the per-key limit raised so that it never caps the load; *Folio, restricted
  key* is GET and the list through 100 keys whose rule filters every document, \`n ≥ 0\`, to
  price a rule), raw better-sqlite3 and Parse Server on PostgreSQL, each in its own process. The load comes from the bench process
  (autocannon, keep-alive, 32 connections). Every target is warmed up, then measured in 6 rounds
  of 1.5 s; each round takes a workload's systems back to back (forwards in one round, backwards
  in the next). Each figure is the median round, beside its **spread** (largest minus smallest
  round, over the median). Server CPU is the server's user and system time from /proc over the round (all its
  threads; for Parse Server, its node process and every PostgreSQL process), per answered
  request. Workloads: GET by id and PATCH merge over 1,000 documents in turn (the patch changes
  \`n\` every time, so each one writes), POST create, a filtered list
  (\`filter[category]=…&sort=price&limit=20\`) and a count (\`count=true&filter[category]=…\`)
  over 100,000 rows in 500 categories with a declared index on (category, price).
- **raw better-sqlite3** (\`bench/workloads/rawSqlite.ts\`): the storage ceilings. Koa over
  better-sqlite3 on the same documents, WAL and \`synchronous=FULL\` as Folio's default, one
  statement (a transaction for PATCH) per request, no auth, versions, change log or validation;
  the list and count over the same expression index. *raw better-sqlite3, Folio's rows* writes
  for each create or patch the rows Folio writes (the document in Folio's table and indexes as
  JSONB, the version it replaces in the history, the change row) in one transaction and one sync.
- **Import, export and bulk** (\`bench/transfer.ts\`): Folio and raw in turn, round for round
  (5 imports of 25,000 documents in each format, 100 bulk requests of 100 operations after 50
  of warm-up, 5 exports of 250,000 in each format), each side first in every other round. raw's import and bulk write Folio's rows
  (CSV read by papaparse into the same documents); its export streams its own table of the same
  documents. An export runs on a freshly started server after one unmeasured export; its memory
  is the server's peak RSS over that format's rounds above its RSS before the first (/proc's
  high-water mark, and 10 ms samples): V8's headroom between collections counts, not only what
  the export keeps.
- **Parse Server 9 on PostgreSQL** (\`bench/workloads/parseServer.ts\`): installed from npm into
  a temporary folder at bench time, a throw-away PostgreSQL cluster with \`fsync\` on; the same
  rows and index. Where PostgreSQL is missing or npm cannot install it, the report says so.

## How to read it

Only ratios of one run carry over: the machine is shared, and absolute figures moved 2–2.7 ×
between whole runs. So each floor's ratio is taken round by round, Folio's round ÷ the other
side's round measured next to it, and the table gives the median of those ratios and **its
spread**: a ratio whose spread is wider than its distance to the floor is inside the noise of
this machine; run again before acting on it.
A *Folio's time ÷ raw's* of 2 means Folio took twice as long. \`npm run bench:scale\` measures
reads at 1,000,000 documents ([performance-scale.md](performance-scale.md)).
\`npm run bench -- --profile\` runs every \`folio serve\` under V8's profiler and says where the
\`.cpuprofile\` files are (open them in Chrome's DevTools); \`BENCH_QUICK=1 npm run bench\` is a
smoke run at small sizes that writes test-output/performance.md instead.`;

export function report(run: {
  parts: readonly Part[];
  verdicts: readonly Verdict[];
  minutes: number;
  profiled: boolean;
  quick: boolean;
}): string {
  const took = run.parts.map((p) => `${p.script.slice(6, -3)} ${p.minutes.toFixed(1)}`).join(', ');
  const passed = run.verdicts.filter((v) => v.pass === true).length;
  const notes = [
    run.quick ? '**A quick smoke run (BENCH_QUICK=1): small sizes, not figures to read.**' : '',
    run.profiled
      ? '**Profiled run (--profile): every `folio serve` ran under the profiler, which costs it time.**'
      : '',
  ].filter(Boolean);
  return `# Performance

Written by \`npm run bench\` on ${new Date().toISOString()}: ${machine()}; load average
${loadavg()
  .map((l) => l.toFixed(2))
  .join(', ')} when it was written. The run took ${run.minutes.toFixed(1)} min (${took}).
${notes.length > 0 ? `\n${notes.join('\n')}\n` : ''}
## Floors

The floors of issue 42, each on this run's paired rounds: ${passed} of ${run.verdicts.length} pass. An
export's memory is flat when the server's peak stays at most ${FLAT_EXPORT_MIB} MiB above its start:
under the size of the export itself, so an export held in memory cannot pass.

${floorsTable(run.verdicts)}

${METHOD}
${run.parts.map((p) => `\n## ${p.title}\n\nMeasured by \`${p.script}\`.\n\n${p.text}\n`).join('')}`;
}
