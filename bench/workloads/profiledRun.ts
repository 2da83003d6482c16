/**
 * A server profiled while it serves workloads one after another: started with `--cpu-prof`
 * (a fresh process; the measured one runs without the profiler, which doubles what it samples),
 * each workload warmed up, then run in a window timed on the profile's own clock, then the
 * server stopped so it writes its profile. Each window's summary says where its time went.
 */
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import {
  type CpuProfile,
  mainThreadProfileName,
  monotonicMicros,
  type ProfileSummary,
  type ProfileUnit,
  type ProfileWindow,
  summariseProfile,
} from '../cpuProfile.js';

export interface ProfiledLoad {
  name: string;
  /** Run once before the window, unprofiled in the summary (the JIT's first compilations). */
  warmUp?: () => Promise<unknown>;
  /** The load; resolves with the requests (or documents) it served, which divide the time. */
  run: () => Promise<number>;
  /** What `run` counts (requests when not given). */
  unit?: ProfileUnit;
}

/**
 * Start the server with the profiler's arguments (`--cpu-prof --cpu-prof-dir=<dir>`), run each
 * load in its window, stop it, and summarise each window from its main thread's profile.
 */
export async function profiledRun(
  profileDir: string,
  start: (nodeArgs: string[]) => Promise<{ stop: () => Promise<unknown> }>,
  loads: readonly ProfiledLoad[],
): Promise<Map<string, ProfileSummary>> {
  const server = await start(['--cpu-prof', `--cpu-prof-dir=${profileDir}`]);
  const windows = new Map<string, ProfileWindow>();
  try {
    for (const load of loads) {
      await load.warmUp?.();
      const fromMicros = monotonicMicros();
      const requests = await load.run();
      windows.set(load.name, { fromMicros, toMicros: monotonicMicros(), requests, unit: load.unit });
    }
  } finally {
    // A graceful stop: the profile is written as the process exits.
    await server.stop();
  }
  const name = mainThreadProfileName(await readdir(profileDir));
  if (!name) throw new Error(`no main-thread profile in ${profileDir}`);
  const profile = JSON.parse(await readFile(join(profileDir, name), 'utf8')) as CpuProfile;
  return new Map([...windows].map(([load, window]) => [load, summariseProfile(profile, window)]));
}

/** A profiled pass's summaries, or why there are none. */
export interface OptionalProfiles {
  profiles: Map<string, ProfileSummary>;
  notProfiled?: string;
}

/**
 * `run` when `enabled` (else none, `offSwitch` saying why). A failure is written to standard
 * error and given as the reason, never thrown: profiles explain a run's figures and never cost
 * it its report.
 */
export async function optionalProfiles(
  enabled: boolean,
  offSwitch: string,
  run: () => Promise<Map<string, ProfileSummary>>,
): Promise<OptionalProfiles> {
  if (!enabled) return { profiles: new Map(), notProfiled: offSwitch };
  try {
    return { profiles: await run() };
  } catch (error) {
    const notProfiled = `the profiled server failed (${error instanceof Error ? error.message : String(error)})`;
    process.stderr.write(`profiles: ${notProfiled}\n`);
    return { profiles: new Map(), notProfiled };
  }
}
