import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import {
  areaOf,
  type CpuProfile,
  mainThreadProfileName,
  monotonicMicros,
  profileMarkdown,
  summariseProfile,
} from '../../bench/cpuProfile.js';

const frame = (id: number, functionName: string, url: string) => ({
  id,
  callFrame: { functionName, url, lineNumber: 0 },
});

/** Samples 10 µs apart from 1,010: store, store, idle, router, GC, store, writev. */
const synthetic: CpuProfile = {
  nodes: [
    frame(1, '(root)', ''),
    frame(2, '(idle)', ''),
    frame(3, 'apply', 'file:///repo/src/store/embedded/documents.ts'),
    frame(4, 'dispatch', 'file:///repo/node_modules/@koa/router/dist/index.mjs'),
    frame(5, '(garbage collector)', ''),
    frame(6, 'writev', ''),
  ],
  startTime: 1000,
  endTime: 1080,
  samples: [3, 3, 2, 4, 5, 3, 6],
  timeDeltas: [10, 10, 10, 10, 10, 10, 10],
};

describe('bench CPU profile summary (bench/cpuProfile.ts)', () => {
  it('counts the samples in the window, each for the time to the next, idle left out', () => {
    const s = summariseProfile(synthetic, { fromMicros: 1020, toMicros: 1060, requests: 3 });
    // 1,020 store, 1,030 idle, 1,040 router, 1,050 GC: 30 µs busy of 40.
    expect(s.busyMicrosPerRequest).to.equal(10);
    expect(s.busyShare).to.equal(0.75);
    expect(s.windowMs).to.equal(0.04);
    expect(s.areas.map((a) => [a.name, a.microsPerRequest])).to.deep.equal([
      ['@koa/router', 10 / 3],
      ['garbage collector', 10 / 3],
      ['src/store/embedded', 10 / 3],
    ]);
    expect(s.functions.map((f) => f.name)).to.deep.equal([
      '(garbage collector)',
      'apply src/store/embedded/documents.ts',
      'dispatch @koa/router/dist/index.mjs',
    ]);
    expect(s.functions[0]?.share).to.equal(1 / 3);
  });

  it('holds its boundaries: a sample at the start counts, one at the end does not', () => {
    const from = (fromMicros: number) =>
      summariseProfile(synthetic, { fromMicros, toMicros: 1060, requests: 1 }).busyMicrosPerRequest;
    expect(from(1020)).to.equal(30);
    expect(from(1021)).to.equal(20);
    const to = (toMicros: number) =>
      summariseProfile(synthetic, { fromMicros: 1050, toMicros, requests: 1 }).busyMicrosPerRequest;
    expect(to(1060)).to.equal(10);
    // The sample at 1,060 counts until the window ends, not until the next sample.
    expect(to(1065)).to.equal(15);
    expect(to(1061)).to.equal(11);
  });

  it('keeps the `top` largest, and per request is NaN for a window of no requests', () => {
    const s = summariseProfile(synthetic, { fromMicros: 1000, toMicros: 1080, requests: 0 }, 2);
    expect(s.functions).to.have.length(2);
    expect(s.functions[0]?.name).to.equal('apply src/store/embedded/documents.ts');
    expect(s.functions[0]?.share).to.equal(0.5);
    expect(s.busyMicrosPerRequest).to.be.NaN;
    expect(profileMarkdown(s)[2]).to.match(/^\| src\/store\/embedded \| NaN \| 50\.0 % \|$/);
  });

  it('names areas: Folio directories, packages (scoped too), Node, native, GC', () => {
    expect(areaOf('run', 'file:///w/main/src/http/middleware/body.ts')).to.equal('src/http/middleware');
    expect(areaOf('x', 'file:///w/main/node_modules/koa/lib/application.js')).to.equal('koa');
    expect(areaOf('x', 'file:///w/main/node_modules/@koa/router/dist/index.mjs')).to.equal('@koa/router');
    expect(areaOf('x', 'file:///w/node_modules/a/node_modules/b/i.js')).to.equal('b');
    expect(areaOf('emit', 'node:events')).to.equal('Node.js');
    expect(areaOf('writev', '')).to.equal('native functions');
    expect(areaOf('(program)', '')).to.equal('native, outside JavaScript');
    expect(areaOf('(garbage collector)', '')).to.equal('garbage collector');
  });

  it('finds the main thread’s file among a process’s profiles', () => {
    expect(
      mainThreadProfileName([
        'CPU.20261129.080527.9758.1.002.cpuprofile',
        'CPU.20261129.080526.9758.0.001.cpuprofile',
      ]),
    ).to.equal('CPU.20261129.080526.9758.0.001.cpuprofile');
    expect(mainThreadProfileName(['CPU.20261129.080527.9758.1.002.cpuprofile'])).to.equal(undefined);
  });

  it('reads a real `--cpu-prof` profile on this process’s clock: each window shows its own work', async function () {
    this.timeout(20_000);
    const dir = await mkdtemp(join(tmpdir(), 'folio-cpuprof-'));
    try {
      // Busy in one function, then (after saying so) in another: windows cut on either side of
      // the switch, on this process's clock, must each see their own function first.
      const script = join(dir, 'spin.mjs');
      await writeFile(
        script,
        `// The clock is read once per 100,000 steps, so the spinning function holds the samples.
function spinAlpha(ms) { const end = performance.now() + ms; let x = 0; do for (let i = 0; i < 1e5; i++) x += Math.sqrt(x + i); while (performance.now() < end); return x; }
function spinBeta(ms) { const end = performance.now() + ms; let x = 0; do for (let i = 0; i < 1e5; i++) x += Math.sqrt(x + i + 1); while (performance.now() < end); return x; }
spinAlpha(600);
process.stdout.write('switch\\n');
spinBeta(600);
`,
      );
      const child = spawn(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${join(dir, 'prof')}`, script]);
      const [first] = (await once(child.stdout, 'data')) as [Buffer];
      const switched = monotonicMicros();
      expect(first.toString()).to.equal('switch\n');
      await once(child, 'exit');
      const name = mainThreadProfileName(await readdir(join(dir, 'prof')));
      expect(name).to.be.a('string');
      const profile = JSON.parse(await readFile(join(dir, 'prof', name as string), 'utf8')) as CpuProfile;
      const before = summariseProfile(profile, {
        fromMicros: switched - 400_000,
        toMicros: switched - 100_000,
        requests: 1,
      });
      const after = summariseProfile(profile, {
        fromMicros: switched + 100_000,
        toMicros: switched + 400_000,
        requests: 1,
      });
      expect(before.functions[0]?.name).to.match(/^spinAlpha .*spin\.mjs:2$/);
      expect(after.functions[0]?.name).to.match(/^spinBeta .*spin\.mjs:3$/);
      // A spinning thread is busy the whole window.
      expect(before.busyShare).to.be.above(0.9);
      expect(after.areas[0]?.share).to.be.above(0.9);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
