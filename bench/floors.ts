/**
 * The floors of issue 42, each judged on one run: the median of Folio's figure ÷ the ceiling's
 * (or the peer's) over rounds measured back to back, with that ratio's spread. Pure: the bench
 * hands in its figures, the tests hand in theirs.
 */
import { type Median, pairedRatio, percent } from './stats.js';
import type { ThroughputRow } from './throughput.js';
import type { TransferFigures } from './transfer.js';
import { RAW, RAW_ROWS, RESTRICTED, WORKLOADS } from './workloads/targets.js';

export interface Verdict {
  floor: string;
  /** Folio's median and spread, then the other side's, as the table shows them. */
  folio: string;
  other: string;
  measured: number;
  /** The spread of the ratio over the paired rounds (stats.ts pairedRatio). */
  spread: number;
  target: string;
  /** null: not measured (the reason in `other`). */
  pass: boolean | null;
}

/** The export's peak server RSS above its start that still counts as flat, MiB. */
export const FLAT_EXPORT_MIB = 64;

const cell = (m: Median | undefined, unit: string) =>
  m ? `${m.median.toFixed(unit === 'req/s' ? 0 : 1)} ${unit} (spread ${percent(m.spread)})` : 'n/a';

function judge(
  floor: string,
  folio: Median | undefined,
  other: Median | undefined,
  unit: string,
  bound: number,
  atMost: boolean,
  invert = false,
): Verdict {
  const ratio = folio && other ? (invert ? pairedRatio(other, folio) : pairedRatio(folio, other)) : undefined;
  const measured = ratio?.median ?? Number.NaN;
  return {
    floor,
    folio: cell(folio, unit),
    other: cell(other, unit),
    measured,
    spread: ratio?.spread ?? Number.NaN,
    target: `${atMost ? '≤' : '≥'} ${bound}`,
    pass: Number.isFinite(measured) ? (atMost ? measured <= bound : measured >= bound) : null,
  };
}

/** Every floor, in the order; those whose figures are missing are `pass: null`. */
export function judgeFloors(
  rows: readonly ThroughputRow[],
  transfer: TransferFigures | undefined,
  parseSkipped?: string,
): Verdict[] {
  const of = (system: string, workload: string) =>
    rows.find((r) => r.system === system && r.workload === workload);
  const cpu = (workload: string, bound: number) =>
    judge(
      `${workload}: server CPU per request ÷ ${RAW}`,
      of('Folio', workload)?.cpuMicrosPerRequest,
      of(RAW, workload)?.cpuMicrosPerRequest,
      'µs',
      bound,
      true,
    );
  const parse = (workload: string) => {
    const verdict = judge(
      `${workload}: req/s ÷ Parse Server`,
      of('Folio', workload)?.requestsPerSecond,
      of('Parse Server', workload)?.requestsPerSecond,
      'req/s',
      4,
      false,
    );
    return parseSkipped ? { ...verdict, other: `did not run: ${parseSkipped}` } : verdict;
  };
  const t = transfer;
  const exportMiB = Math.max(...(t?.exports ?? []).map((e) => e.addedMiB));
  return [
    ...[WORKLOADS.get, WORKLOADS.list, WORKLOADS.count].map((w) => cpu(w, 2)),
    ...[WORKLOADS.post, WORKLOADS.patch].map((w) => cpu(w, 1)),
    // Issue 45: a key whose rule filters documents costs at most 1.2 × an unrestricted one.
    ...[WORKLOADS.get, WORKLOADS.list].map((w) =>
      judge(
        `${w}: server CPU per request, restricted key ÷ unrestricted`,
        of(RESTRICTED, w)?.cpuMicrosPerRequest,
        of('Folio', w)?.cpuMicrosPerRequest,
        'µs',
        1.2,
        true,
      ),
    ),
    ...Object.values(WORKLOADS).map(parse),
    // Rates compared by their times: raw's over Folio's.
    ...(['NDJSON', 'CSV'] as const).map((format) => {
      const figures = format === 'CSV' ? t?.importCsv : t?.importNdjson;
      const floor = `import ${format}: docs/s ÷ ${RAW_ROWS} (by time)`;
      return judge(floor, figures?.folio, figures?.raw, 'ms', 0.6, false, true);
    }),
    judge(`bulk of 100: time ÷ ${RAW_ROWS}`, t?.bulk.folio, t?.bulk.raw, 'ms', 2, true),
    judge(`export NDJSON: time ÷ ${RAW}`, t?.exportNdjson.folio, t?.exportNdjson.raw, 'ms', 2.5, true),
    {
      floor: 'export, every format: server RSS above its start (flat memory), MiB',
      folio: t ? `${exportMiB.toFixed(0)} MiB (the export is ${t.exports[0]?.mib.toFixed(0)} MiB)` : 'n/a',
      other: '',
      measured: t ? exportMiB : Number.NaN,
      spread: Number.NaN,
      target: `≤ ${FLAT_EXPORT_MIB}`,
      pass: t ? exportMiB <= FLAT_EXPORT_MIB : null,
    },
  ];
}

export function floorsTable(verdicts: readonly Verdict[]): string {
  const result = (v: Verdict) => (v.pass === null ? 'not measured' : v.pass ? 'pass' : '**FAIL**');
  return [
    '| floor | Folio | ceiling or peer | measured | its spread | target | result |',
    '| --- | ---: | ---: | ---: | ---: | ---: | --- |',
    ...verdicts.map(
      (v) =>
        `| ${v.floor} | ${v.folio} | ${v.other} | ${Number.isFinite(v.measured) ? v.measured.toFixed(2) : 'n/a'} | ${percent(v.spread)} | ${v.target} | ${result(v)} |`,
    ),
  ].join('\n');
}
