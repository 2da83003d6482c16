/**
 * The report's section on missed targets: for each workload with a target missed in this run,
 * what was asked and measured, then where a profiled Folio server spent that workload's time
 * (bench/cpuProfile.ts). A workload whose targets are all met is not shown.
 */
import { type ProfileSummary, profileMarkdown } from './cpuProfile.js';
import { askedText, type OneShotVerdict, oneShotAskedText, type Verdict } from './storageTargets.js';

export function missedProfilesSection(
  verdicts: readonly Verdict[],
  oneShot: readonly OneShotVerdict[],
  profiles: ReadonlyMap<string, ProfileSummary>,
  oneShotProfiles: Readonly<Record<string, ProfileSummary>>,
  /** Why a side was not profiled, where it was not (a failure, or profiling turned off). */
  notProfiled: { peers?: string | undefined; oneShot?: string | undefined } = {},
): string[] {
  // Missed targets by workload, in the order the targets list them.
  const missed = new Map<
    string,
    { asked: string[]; summary: ProfileSummary | undefined; why: string | undefined }
  >();
  const add = (
    workload: string,
    asked: string,
    summary: ProfileSummary | undefined,
    why: string | undefined,
  ) => {
    const entry = missed.get(workload) ?? { asked: [], summary, why };
    entry.asked.push(asked);
    missed.set(workload, entry);
  };
  for (const v of verdicts)
    if (v.met === false)
      add(
        v.target.workload,
        `${askedText(v.target)} (measured ${v.measured.toFixed(2)})`,
        profiles.get(v.target.workload),
        notProfiled.peers,
      );
  for (const v of oneShot)
    if (v.met === false)
      add(
        v.target.name,
        `${oneShotAskedText(v.target)} (measured ${v.measured.toFixed(2)})`,
        oneShotProfiles[v.target.name],
        notProfiled.oneShot,
      );
  if (missed.size === 0) return ['Every target of this run is met.'];
  return [...missed].flatMap(([workload, { asked, summary, why }]) => [
    `### ${workload}`,
    '',
    `Missed: ${asked.join('; ')}.`,
    '',
    ...(summary
      ? [
          `Profiled for ${(summary.windowMs / 1000).toFixed(1)} s over ${summary.requests.toLocaleString('en')} ${summary.unit[1]}: ${summary.busyMicrosPerRequest.toFixed(1)} µs of busy main-thread samples per ${summary.unit[0]} (busy ${(summary.busyShare * 100).toFixed(0)} % of the window).`,
          '',
          ...profileMarkdown(summary),
        ]
      : [`Not profiled in this run${why ? `: ${why}` : ''}.`]),
    '',
  ]);
}
