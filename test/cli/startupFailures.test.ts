/**
 * `folio serve` that cannot start prints one line naming the variable to fix and exits 1, never
 * a stack trace. Each case spawns the command as a user would. The line each cause gets (a bad
 * MONGODB_URI, an unreachable MongoDB, a taken port, ...) is test/cli/startupErrors.test.ts's,
 * in-process: that report is what the command prints.
 */
import { chmod, mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { type CliResult, type RunOptions, runFolio } from '../support/cli.js';

/** The user `nobody`, for the permission cases when the suite runs as root (as CI does). */
const NOBODY = 65534;

function expectOneLineNaming(result: CliResult, variable: string): void {
  expect(result.code, result.err).to.equal(1);
  const lines = result.err.trimEnd().split('\n');
  expect(lines, result.err).to.have.length(1);
  expect(lines[0]).to.match(new RegExp(`^${variable}[: ]`));
  expect(result.err).to.not.include('    at ');
}

describe('folio serve: start-up failures', function () {
  this.timeout(30_000);
  let dir: string;
  /** How to run the command as a user the permission cases apply to; null when impossible. */
  let unprivileged: RunOptions | null = null;
  let whyNotUnprivileged = '';

  before(async () => {
    dir = await mkdtemp(join(tmpdir(), 'folio-startup-'));
    if (process.getuid?.() !== 0) {
      unprivileged = {};
      return;
    }
    // Root ignores file permissions, so the permission cases run the command as `nobody`,
    // which works only where `nobody` can read this checkout.
    await chmod(dir, 0o755);
    // `nobody` may not even reach the node binary (a Node installed in a private folder): then
    // spawning fails outright, and the permission cases are skipped with that reason.
    const probe = await runFolio(['help'], {}, { uid: NOBODY, gid: NOBODY }).catch((error: Error) => ({
      code: null,
      out: '',
      err: error.message,
    }));
    if (probe.code === 0) unprivileged = { uid: NOBODY, gid: NOBODY };
    else whyNotUnprivileged = `user nobody cannot run this checkout: ${probe.err.split('\n')[0]}`;
  });
  after(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  const serve = (env: Record<string, string>, options: RunOptions = {}) =>
    runFolio(['serve'], { PORT: '0', HOST: '127.0.0.1', FOLIO_LOG_LEVEL: 'silent', ...env }, options);

  it('FOLIO_DATA_DIR that is a file', async () => {
    const file = join(dir, 'a-file');
    await writeFile(file, 'x');
    const result = await serve({ FOLIO_DATA_DIR: file });
    expectOneLineNaming(result, 'FOLIO_DATA_DIR');
    expect(result.err).to.include(`${file} as the data directory: it is a file, not a directory`);
  });

  it('FOLIO_DATA_DIR that this user may not write, or may not even enter', async function () {
    if (!unprivileged) {
      process.stdout.write(`      SKIPPED: permission cases (running as root, and ${whyNotUnprivileged})\n`);
      this.skip();
    }
    const readOnly = join(dir, 'read-only');
    await mkdir(readOnly, { mode: 0o555 });
    const unwritable = await serve({ FOLIO_DATA_DIR: readOnly }, unprivileged);
    expectOneLineNaming(unwritable, 'FOLIO_DATA_DIR');
    expect(unwritable.err).to.include(`${readOnly} as the data directory: permission denied`);

    const closed = join(dir, 'closed');
    await mkdir(closed, { mode: 0o000 });
    const inside = join(closed, 'data');
    const denied = await serve({ FOLIO_DATA_DIR: inside }, unprivileged);
    expectOneLineNaming(denied, 'FOLIO_DATA_DIR');
    expect(denied.err).to.include(`${inside} as the data directory: permission denied`);
    await chmod(closed, 0o755);
  });

  it('a bad value of any variable: one "Invalid configuration" line naming the variables', async () => {
    const cases: Array<[Record<string, string>, RegExp]> = [
      [
        { FOLIO_METRICS_ENABLED: 'true' },
        /^Invalid configuration: FOLIO_METRICS_TOKEN: must be at least 16 characters when FOLIO_METRICS_ENABLED is true/,
      ],
      [
        { PORT: '70000', FOLIO_AUTH_SIGNUP: 'maybe' },
        /^Invalid configuration: PORT: .+; FOLIO_AUTH_SIGNUP: /,
      ],
    ];
    for (const [env, line] of cases) {
      const result = await serve({ FOLIO_DATA_DIR: join(dir, 'config-cases'), ...env });
      expect(result.code, result.err).to.equal(1);
      expect(result.err.trimEnd().split('\n'), result.err).to.have.length(1);
      expect(result.err).to.match(line);
      expect(result.err).to.not.match(/config key|metrics\.enabled|metrics\.token/);
    }
  });
});
