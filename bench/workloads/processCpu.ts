/**
 * Server CPU from /proc: what a process has used so far, for the one-shot workloads (import,
 * export, bulk; to the ns) and the throughput rounds (10 ms ticks, dead threads included).
 */
import { readdirSync, readFileSync } from 'node:fs';

const USER_HZ = 100;

/** One thread's scheduler run time so far, in ns (`schedstat`'s first field); throws without /proc. */
function threadRunNs(pid: number, tid: number | string): number {
  return Number(readFileSync(`/proc/${pid}/task/${tid}/schedstat`, 'utf8').split(' ')[0]);
}

/**
 * CPU time of a process and all its live threads, in ms (Linux /proc; NaN elsewhere): the sum
 * of each thread's scheduler run time (`schedstat`, in ns), which a bulk request of a few ms
 * can be measured with; `stat`'s 10 ms ticks where schedstat is missing.
 */
export function processCpuMs(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    let ns = 0;
    for (const tid of readdirSync(`/proc/${pid}/task`)) ns += threadRunNs(pid, tid);
    if (Number.isFinite(ns)) return ns / 1e6;
  } catch {
    // Fall through to the ticks.
  }
  const { userMs, systemMs } = processCpuTimes(pid);
  return userMs + systemMs;
}

/** A process's user and system CPU time (all its threads), in ms, from `stat`'s 10 ms ticks; NaN without /proc. */
export function processCpuTimes(pid: number | undefined): { userMs: number; systemMs: number } {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which is in parentheses and may hold spaces; utime and
    // stime are fields 14 and 15 of the line, 12 and 13 after the name.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return { userMs: (Number(fields[11]) / USER_HZ) * 1000, systemMs: (Number(fields[12]) / USER_HZ) * 1000 };
  } catch {
    return { userMs: Number.NaN, systemMs: Number.NaN };
  }
}
