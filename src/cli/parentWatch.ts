/**
 * Stop with the script runner. `npm start` runs `sh -c "exec node bin/folio.js serve"`, so npm
 * passes a `kill`'s SIGTERM straight to the server; but a `kill -9` of npm (or a runner that
 * passes nothing on) would leave the server running, holding the port and the data directory's
 * lock with no terminal left to stop it. So, when a script runner started this
 * process (it sets `npm_lifecycle_event`; npm, yarn and pnpm all do), the server watches its
 * parent and grandparent and shuts down cleanly when either goes away.
 */
import { readFileSync } from 'node:fs';

export interface ProcStat {
  /** One letter: R running, S sleeping, Z zombie (exited, not yet reaped), ... */
  state: string;
  ppid: number;
}

/** Parse Linux's `/proc/<pid>/stat`; the command name may itself hold spaces or parentheses. */
export function parseProcStat(text: string): ProcStat | null {
  const afterName = text
    .slice(text.lastIndexOf(')') + 1)
    .trim()
    .split(' ');
  const [state, ppid] = afterName;
  if (!state || !ppid || !/^\d+$/.test(ppid)) return null;
  return { state, ppid: Number(ppid) };
}

function procStat(pid: number): ProcStat | null {
  try {
    return parseProcStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return null; // no /proc (macOS, Windows) or no such process
  }
}

/** Whether a process exists and has not exited (a zombie has exited). */
export function isRunning(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
  return procStat(pid)?.state !== 'Z';
}

export interface ParentWatchOptions {
  env?: NodeJS.ProcessEnv;
  intervalMs?: number;
}

/**
 * Call `onGone` once when the script runner that started this process goes away. Does nothing
 * (returns a no-op) when no script runner started it. Returns a function that stops watching.
 */
export function watchParent(onGone: () => void, options: ParentWatchOptions = {}): () => void {
  const { env = process.env, intervalMs = 1000 } = options;
  const parent = process.ppid;
  // Already orphaned (adopted by init or a sub-reaper): nothing to follow.
  if (!env.npm_lifecycle_event || parent <= 1) return () => {};
  const grandparent = procStat(parent)?.ppid;
  const watched = [parent, ...(grandparent && grandparent > 1 ? [grandparent] : [])];
  const timer = setInterval(() => {
    if (process.ppid === parent && watched.every(isRunning)) return;
    clearInterval(timer);
    onGone();
  }, intervalMs);
  // The watch alone must never keep the process alive.
  timer.unref();
  return () => clearInterval(timer);
}
