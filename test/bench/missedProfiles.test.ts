import { expect } from 'chai';
import type { ProfileSummary } from '../../bench/cpuProfile.js';
import { missedProfilesSection } from '../../bench/missedProfiles.js';
import { judgeOneShot, judgeTargets, type Lookup, STORAGE_TARGETS } from '../../bench/storageTargets.js';

/** GET's and PATCH's CPU targets, Folio at `getCpu` and `patchCpu` µs against raw's 100. */
function verdicts(getCpu: number, patchCpu: number) {
  const lookup: Lookup = (system, workload) => {
    if (system === 'raw better-sqlite3') return { requestsPerSecond: 1, cpuMicrosPerRequest: 100 };
    if (system !== 'Folio') return undefined;
    return { requestsPerSecond: 1, cpuMicrosPerRequest: workload === 'GET by id' ? getCpu : patchCpu };
  };
  const cpuTargets = STORAGE_TARGETS.filter(
    (t) => t.measure === 'cpu' && (t.workload === 'GET by id' || t.workload === 'PATCH merge'),
  );
  return judgeTargets(lookup, cpuTargets);
}

const summary = (name: string): ProfileSummary => ({
  windowMs: 3000,
  requests: 30_000,
  unit: ['request', 'requests'],
  busyMicrosPerRequest: 60,
  busyShare: 0.9,
  functions: [{ name: `${name} src/x.ts`, microsPerRequest: 30, share: 0.5 }],
  areas: [{ name: 'src/store/embedded', microsPerRequest: 30, share: 0.5 }],
});

const profiles = new Map([
  ['GET by id', summary('getJson')],
  ['PATCH merge', summary('patch')],
]);

describe('bench report: where a missed target’s time goes (bench/missedProfiles.ts)', () => {
  it('shows a missed workload with what it asked and its profile, and leaves a met one out', () => {
    const text = missedProfilesSection(verdicts(151, 150), [], profiles, {}).join('\n');
    expect(text).to.include('### GET by id');
    expect(text).to.include('Missed: GET by id: CPU per request ≤ 1.5 × raw better-sqlite3 (measured 1.51).');
    expect(text).to.include('60.0 µs of busy main-thread samples per request (busy 90 % of the window)');
    expect(text).to.include('| getJson src/x.ts | 30.0 | 50.0 % |');
    expect(text).not.to.include('PATCH');
  });

  it('says so when every target is met, and when a missed one was not profiled', () => {
    expect(missedProfilesSection(verdicts(150, 150), [], profiles, {})).to.deep.equal([
      'Every target of this run is met.',
    ]);
    const text = missedProfilesSection(verdicts(151, 150), [], new Map(), {}).join('\n');
    expect(text).to.include('### GET by id');
    expect(text).to.include('Not profiled in this run.');
    // With the reason where the run gave one, for each side on its own.
    const why = missedProfilesSection(verdicts(151, 150), [], new Map(), {}, { peers: 'PEERS_PROFILE=0' });
    expect(why.join('\n')).to.include('Not profiled in this run: PEERS_PROFILE=0.');
    const oneShot = judgeOneShot(new Map([['bulk of 100', { folio: 3, raw: 1 }]]));
    const both = missedProfilesSection(
      verdicts(151, 150),
      oneShot,
      new Map(),
      {},
      {
        oneShot: 'TRANSFER_PROFILE=0',
      },
    ).join('\n');
    expect(both).to.include(
      '### GET by id\n\nMissed: GET by id: CPU per request ≤ 1.5 × raw better-sqlite3 (measured 1.51).\n\nNot profiled in this run.',
    );
    expect(both).to.include('Not profiled in this run: TRANSFER_PROFILE=0.');
  });

  it('shows a missed one-shot target with its own unit', () => {
    const oneShot = judgeOneShot(
      new Map([
        ['bulk of 100', { folio: 2.6, raw: 1 }],
        ['import NDJSON', { folio: 0.4, raw: 1 }],
      ]),
    );
    const text = missedProfilesSection([], oneShot, new Map(), {
      'bulk of 100': {
        ...summary('apply'),
        requests: 50,
        unit: ['request of 100 operations', 'requests of 100 operations'],
      },
    }).join('\n');
    expect(text).to.include('### bulk of 100');
    expect(text).to.include("Missed: bulk of 100: time ≤ 2.5 × raw better-sqlite3's (measured 2.60).");
    expect(text).to.include(
      'over 50 requests of 100 operations: 60.0 µs of busy main-thread samples per request of 100 operations',
    );
    // Met at exactly 0.4: not shown.
    expect(text).not.to.include('import NDJSON');
  });
});
