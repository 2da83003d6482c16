/** Background jobs: Agenda's backend on the store, with the server's upkeep. */
import type { AgendaBackend } from 'agenda';

/** Upkeep of the job store done by the server: counts and deletes, never a load of all jobs. */
export interface JobUpkeep {
  /** Remove jobs of `name` that completed (not failed last, nothing due, unlocked) before `beforeMs`. */
  removeCompletedBefore(name: string, beforeMs: number): Promise<number>;
}

/** Agenda's backend whose repository also does `JobUpkeep`. */
export interface JobBackend extends AgendaBackend {
  readonly repository: AgendaBackend['repository'] & JobUpkeep;
}
