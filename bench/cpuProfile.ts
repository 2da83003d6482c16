/**
 * Where a profiled server's main thread spent a window of time, from a V8 CPU profile (the
 * `.cpuprofile` that `node --cpu-prof` writes): by function and by area of the code, in µs per
 * request and as a share of the busy samples. The report shows it for each workload whose target
 * is missed, so a reader sees what remains instead of a ratio alone.
 *
 * A sample stands for the time until the next one. Samples in the idle frame are the event loop
 * waiting; everything else is busy. better-sqlite3's statements run inside the JavaScript
 * function that calls them (a native call has no frame of its own), so SQLite's work shows under
 * Folio's store functions; a blocking `fsync` in a commit counts there too.
 */

/** The parts of a V8 CPU profile this reads (Chrome DevTools protocol `Profiler.Profile`). */
export interface CpuProfile {
  nodes: Array<{
    id: number;
    callFrame: { functionName: string; url: string; lineNumber: number };
    children?: number[];
  }>;
  /** µs on the same monotonic clock as `process.hrtime` (Linux: CLOCK_MONOTONIC). */
  startTime: number;
  endTime: number;
  samples: number[];
  /** µs from the previous sample (the first: from startTime). */
  timeDeltas: number[];
}

/** What a window counted, one and many: requests by default, or a one-shot workload's documents. */
export type ProfileUnit = readonly [one: string, many: string];
export const REQUESTS: ProfileUnit = ['request', 'requests'];

/** A span of the profiled process's life, on the monotonic clock, and the requests served in it. */
export interface ProfileWindow {
  fromMicros: number;
  toMicros: number;
  requests: number;
  /** What `requests` counts (REQUESTS when not given). */
  unit?: ProfileUnit;
}

export interface ProfileShare {
  /** A function (`name file`) or an area of the code. */
  name: string;
  microsPerRequest: number;
  /** Of the window's busy time, 0 to 1. */
  share: number;
}

export interface ProfileSummary {
  windowMs: number;
  requests: number;
  unit: ProfileUnit;
  /** Busy (not idle) main-thread time per request, µs. */
  busyMicrosPerRequest: number;
  /** Busy time ÷ the window's length. */
  busyShare: number;
  functions: ProfileShare[];
  areas: ProfileShare[];
}

const IDLE = '(idle)';

/** The current time on the clock of a profile's timestamps, in µs. */
export function monotonicMicros(): number {
  return Number(process.hrtime.bigint() / 1000n);
}

/** `src/…` for Folio's own files, `package/path` for a dependency, as given otherwise. */
export function shortFile(url: string): string {
  const path = url.replace(/^file:\/\//, '');
  const dep = path.lastIndexOf('/node_modules/');
  if (dep >= 0) return path.slice(dep + '/node_modules/'.length);
  const src = path.lastIndexOf('/src/');
  if (src >= 0) return path.slice(src + 1);
  return path;
}

/**
 * The area a frame belongs to: Folio's directory (`src/store/embedded`), a dependency's
 * package (`koa`, `@koa/router`), Node's own JavaScript, a native function, V8's garbage
 * collector, or native code outside any JavaScript function (`(program)`: the event loop, the
 * HTTP parser, socket calls).
 */
export function areaOf(functionName: string, url: string): string {
  if (url === '') {
    if (functionName === '(garbage collector)') return 'garbage collector';
    if (functionName === '(program)') return 'native, outside JavaScript';
    return 'native functions';
  }
  if (url.startsWith('node:')) return 'Node.js';
  const file = shortFile(url);
  if (url.includes('/node_modules/')) {
    const [scope = '', name = ''] = file.split('/');
    return scope.startsWith('@') ? `${scope}/${name}` : scope;
  }
  if (file.startsWith('src/')) return file.slice(0, file.lastIndexOf('/'));
  return file;
}

/** The function, with its file (and line where the profile has one). */
function functionKey(frame: CpuProfile['nodes'][number]['callFrame']): string {
  const name = frame.functionName || '(anonymous)';
  if (frame.url === '') return name;
  const line = frame.lineNumber > 0 ? `:${frame.lineNumber + 1}` : '';
  return `${name} ${shortFile(frame.url)}${line}`;
}

/**
 * The window's samples by function (self time) and by area, largest first, `top` of each.
 * `requests` divides the time; a window with none gives NaN per request.
 */
export function summariseProfile(profile: CpuProfile, window: ProfileWindow, top = 12): ProfileSummary {
  const frames = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
  const byFunction = new Map<string, number>();
  const byArea = new Map<string, number>();
  let busy = 0;
  let at = profile.startTime;
  const times = profile.timeDeltas.map((delta) => {
    at += delta;
    return at;
  });
  for (let i = 0; i < profile.samples.length; i++) {
    const time = times[i] as number;
    if (time < window.fromMicros || time >= window.toMicros) continue;
    // The sample stands for the time until the next one (the last: until the window ends).
    const next = Math.min(times[i + 1] ?? window.toMicros, window.toMicros);
    const weight = Math.max(0, next - time);
    const frame = frames.get(profile.samples[i] as number);
    if (!frame || frame.functionName === IDLE) continue;
    busy += weight;
    const fn = functionKey(frame);
    byFunction.set(fn, (byFunction.get(fn) ?? 0) + weight);
    const area = areaOf(frame.functionName, frame.url);
    byArea.set(area, (byArea.get(area) ?? 0) + weight);
  }
  const requests = window.requests;
  const ranked = (totals: Map<string, number>): ProfileShare[] =>
    [...totals]
      .sort((a, b) => b[1] - a[1] || (a[0] < b[0] ? -1 : 1))
      .slice(0, top)
      .map(([name, micros]) => ({
        name,
        microsPerRequest: requests > 0 ? micros / requests : Number.NaN,
        share: busy > 0 ? micros / busy : 0,
      }));
  const windowMicros = window.toMicros - window.fromMicros;
  return {
    windowMs: windowMicros / 1000,
    requests,
    unit: window.unit ?? REQUESTS,
    busyMicrosPerRequest: requests > 0 ? busy / requests : Number.NaN,
    busyShare: windowMicros > 0 ? busy / windowMicros : 0,
    functions: ranked(byFunction),
    areas: ranked(byArea),
  };
}

/** The profile written by the main thread of a process started with `--cpu-prof` (thread 0). */
export function mainThreadProfileName(names: readonly string[]): string | undefined {
  // CPU.<date>.<time>.<pid>.<thread>.<sequence>.cpuprofile; worker threads write their own.
  return names.find((name) => /^CPU\.\d+\.\d+\.\d+\.0\.\d+\.cpuprofile$/.test(name));
}

/** A summary as markdown: the areas, then the functions, each with µs per its unit and share. */
export function profileMarkdown(summary: ProfileSummary): string[] {
  const [unit] = summary.unit;
  const row = (s: ProfileShare) =>
    `| ${s.name.replaceAll('|', '\\|')} | ${s.microsPerRequest.toFixed(s.microsPerRequest >= 100 ? 0 : 1)} | ${(s.share * 100).toFixed(1)} % |`;
  return [
    `| area of the code | µs per ${unit} | of the busy samples |`,
    '| --- | ---: | ---: |',
    ...summary.areas.map(row),
    '',
    `| function (its own time, not its callees') | µs per ${unit} | of the busy samples |`,
    '| --- | ---: | ---: |',
    ...summary.functions.map(row),
  ];
}

/** One line for a console: the busy time per its unit and the three largest areas. */
export function profileLine(name: string, summary: ProfileSummary): string {
  const [unit] = summary.unit;
  const areas = summary.areas
    .slice(0, 3)
    .map((a) => `${a.name} ${(a.share * 100).toFixed(0)} %`)
    .join(', ');
  return `profiled: ${name.padEnd(30)} ${summary.busyMicrosPerRequest.toFixed(1)} µs busy per ${unit} (${areas})`;
}
