/**
 * The performance targets (each workload against the storage ceiling that does the same
 * work, raw better-sqlite3 behind Koa, and against the peers), as data, and how a run is
 * judged against them. Pure: the peer bench hands in its medians, the tests hand in theirs.
 *
 * Why raw better-sqlite3 and CPU per request: a ratio to bare Koa answering a constant swung
 * 2x between runs with the machine's noise (its log writes), while the CPU a server spends per
 * request of the same storage work moves far less.
 */

export type Measure = 'throughput' | 'cpu';

export interface StorageTarget {
  workload: string;
  measure: Measure;
  /** The system Folio is compared with. */
  versus: string;
  /** throughput: Folio's req/s ÷ theirs must be at least this; cpu: Folio's µs ÷ theirs at most. */
  ratio: number;
}

export const LIST_WORKLOAD = 'filtered list, sort, limit 20';

const RAW = 'raw better-sqlite3';

export const STORAGE_TARGETS: readonly StorageTarget[] = [
  { workload: 'GET by id', measure: 'cpu', versus: RAW, ratio: 1.5 },
  { workload: 'PATCH merge', measure: 'cpu', versus: RAW, ratio: 1.5 },
  { workload: LIST_WORKLOAD, measure: 'cpu', versus: RAW, ratio: 1.5 },
  { workload: 'count', measure: 'cpu', versus: RAW, ratio: 1.5 },
  { workload: 'POST create', measure: 'cpu', versus: RAW, ratio: 1.0 },
  { workload: 'GET by id', measure: 'throughput', versus: RAW, ratio: 0.7 },
  { workload: 'PATCH merge', measure: 'throughput', versus: RAW, ratio: 0.7 },
  { workload: LIST_WORKLOAD, measure: 'throughput', versus: RAW, ratio: 0.5 },
  { workload: 'count', measure: 'throughput', versus: RAW, ratio: 0.7 },
  { workload: 'POST create', measure: 'throughput', versus: RAW, ratio: 1.5 },
  ...['json-server', 'pouchdb-server', 'Parse Server'].flatMap((peer) =>
    ['GET by id', 'POST create', 'PATCH merge', LIST_WORKLOAD, 'count'].map(
      (workload): StorageTarget => ({ workload, measure: 'throughput', versus: peer, ratio: 4 }),
    ),
  ),
];

/** A system's medians on a workload, or undefined where it has no equivalent. */
export type Lookup = (
  system: string,
  workload: string,
) => { requestsPerSecond: number; cpuMicrosPerRequest: number } | undefined;

export interface Verdict {
  target: StorageTarget;
  /** Folio ÷ the other system, in the target's measure; NaN where either side is missing. */
  measured: number;
  met: boolean | null;
}

/** Each target judged; a target whose systems did not both run is `met: null` (not measured). */
export function judgeTargets(lookup: Lookup, targets = STORAGE_TARGETS): Verdict[] {
  return targets.map((target) => {
    const folio = lookup('Folio', target.workload);
    const other = lookup(target.versus, target.workload);
    const measured =
      folio && other
        ? target.measure === 'throughput'
          ? folio.requestsPerSecond / other.requestsPerSecond
          : folio.cpuMicrosPerRequest / other.cpuMicrosPerRequest
        : Number.NaN;
    return { target, measured, met: meets(measured, target.ratio, target.measure === 'throughput') };
  });
}

/** Whether a ratio meets its bound (`atLeast`: from below, else from above); null when not measured. */
function meets(measured: number, ratio: number, atLeast: boolean): boolean | null {
  if (!Number.isFinite(measured)) return null;
  return atLeast ? measured >= ratio : measured <= ratio;
}

/** A row of a report's target table: what is asked, what was measured, whether it is met. */
function targetRow(asked: string, measured: number, met: boolean | null): string {
  const verdict = met === null ? 'not measured' : met ? 'yes' : 'no';
  return `| ${asked} | ${Number.isFinite(measured) ? measured.toFixed(2) : 'n/a'} | ${verdict} |`;
}

/** What a target asks, as the report's tables say it. */
export function askedText({ workload, measure, versus, ratio }: StorageTarget): string {
  return measure === 'throughput'
    ? `${workload}: req/s ≥ ${ratio} × ${versus}`
    : `${workload}: CPU per request ≤ ${ratio} × ${versus}`;
}

export function verdictLine(v: Verdict): string {
  return targetRow(askedText(v.target), v.measured, v.met);
}

/**
 * How much a figure varied across the rounds of one run: (max − min) ÷ median, so a reader can
 * tell a difference between systems from noise. NaN with fewer than two finite rounds.
 */
export function spread(values: readonly number[]): number {
  const finite = values.filter(Number.isFinite).sort((a, b) => a - b);
  if (finite.length < 2) return Number.NaN;
  const mid = finite.length / 2;
  const median =
    finite.length % 2
      ? (finite[Math.floor(mid)] as number)
      : ((finite[mid - 1] as number) + (finite[mid] as number)) / 2;
  return ((finite.at(-1) as number) - (finite[0] as number)) / median;
}

/** A one-shot workload's target: Folio's figure ÷ raw better-sqlite3's of the same run. */
export interface OneShotTarget {
  name: string;
  /** `rate`: docs/s, Folio ÷ raw at least `ratio`; `time`: seconds, Folio ÷ raw at most. */
  measure: 'rate' | 'time';
  ratio: number;
}

export const ONE_SHOT_TARGETS: readonly OneShotTarget[] = [
  { name: 'import NDJSON', measure: 'rate', ratio: 0.4 },
  { name: 'import CSV', measure: 'rate', ratio: 0.4 },
  { name: 'export NDJSON', measure: 'time', ratio: 2.5 },
  { name: 'bulk of 100', measure: 'time', ratio: 2.5 },
];

/** Each one-shot target against Folio's and raw's figures by target name (absent: not measured). */
export function judgeOneShot(
  figures: ReadonlyMap<string, { folio: number | undefined; raw: number | undefined }>,
  targets = ONE_SHOT_TARGETS,
): Array<{ target: OneShotTarget; measured: number; met: boolean | null }> {
  return targets.map((target) => {
    const pair = figures.get(target.name);
    const measured =
      pair?.folio !== undefined && pair.raw !== undefined && pair.raw > 0
        ? pair.folio / pair.raw
        : Number.NaN;
    return { target, measured, met: meets(measured, target.ratio, target.measure === 'rate') };
  });
}

export type OneShotVerdict = ReturnType<typeof judgeOneShot>[number];

/** What a one-shot target asks, as the report's tables say it. */
export function oneShotAskedText({ name, measure, ratio }: OneShotTarget): string {
  return measure === 'rate'
    ? `${name}: documents/s ≥ ${ratio} × raw better-sqlite3`
    : `${name}: time ≤ ${ratio} × raw better-sqlite3's`;
}

export function oneShotLine(v: OneShotVerdict): string {
  return targetRow(oneShotAskedText(v.target), v.measured, v.met);
}
