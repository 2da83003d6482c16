/** Server CPU for the one-shot workloads (import, export, bulk): what a process has used so far. */
import { readFileSync } from 'node:fs';

const USER_HZ = 100;

/**
 * User plus system CPU time of a process and all its threads, in ms (Linux /proc; NaN
 * elsewhere). Ticks of 10 ms: measure workloads of a few hundred ms or more.
 */
export function processCpuMs(pid: number | undefined): number {
  if (pid === undefined) return Number.NaN;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name, which is in parentheses and may hold spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) / USER_HZ) * 1000;
  } catch {
    return Number.NaN;
  }
}
