/**
 * Agenda's jobs overview from counts the database grouped by name and state: both job
 * repositories (embedded/jobs, mongodb/jobs) group on the server and fold the counts here, where
 * the library's own overview loads every job.
 */
import type { JobsOverview } from 'agenda';

/** Jobs of one name in one computed state; `paused` of them are disabled. */
export interface JobStateCount {
  name: string;
  state: keyof JobsOverview;
  n: number;
  paused: number;
}

export function jobsOverview(counts: Iterable<JobStateCount>): JobsOverview[] {
  const overviews = new Map<string, JobsOverview>();
  for (const count of counts) {
    let overview = overviews.get(count.name);
    if (!overview) {
      overview = {
        name: count.name,
        total: 0,
        running: 0,
        scheduled: 0,
        queued: 0,
        completed: 0,
        failed: 0,
        repeating: 0,
        paused: 0,
      };
      overviews.set(count.name, overview);
    }
    overview.total += count.n;
    (overview[count.state] as number) += count.n;
    // Paused is counted besides the computed state (a paused job is also, say, scheduled).
    overview.paused += count.paused;
  }
  return [...overviews.values()];
}
