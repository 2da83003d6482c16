/**
 * `npm start` as a new user runs it: the output the README shows, and a `kill` of npm stops the
 * server (it used to leave it running on its port, holding the data directory).
 */
import { execSync } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { expect } from 'chai';
import { isRunning, parseProcStat } from '../../src/cli/parentWatch.js';
import { readHolderPid } from '../../src/store/embedded/database/dataDirLock.js';
import { serveFolio } from '../support/folioProcess.js';
import { until } from '../support/timeout.js';

/** Whether something accepts TCP connections on the port. */
async function accepts(port: number): Promise<boolean> {
  const socket = connect(port, '127.0.0.1');
  try {
    await once(socket, 'connect');
    return true;
  } catch {
    return false;
  } finally {
    socket.destroy();
  }
}

/** The processes a failed stop left, for its message: who still runs, and in what state. */
function processTree(): string {
  try {
    return execSync('ps -e --forest -o pid,ppid,stat,etime,args').toString();
  } catch (error) {
    return String(error);
  }
}

/** The start-up output block of the README's quick start. */
function readmeStartupBlock(): string[] {
  const readme = readFileSync('README.md', 'utf8');
  const block = /```text\n(> folio@[\s\S]*?)```/.exec(readme)?.[1];
  if (!block) throw new Error('README.md has no start-up output block');
  return block.trimEnd().split('\n');
}

/** A README line as a pattern: `...` stands for a generated secret. */
function linePattern(line: string): RegExp {
  const escaped = line.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replaceAll('\\.\\.\\.', '\\S+');
  return new RegExp(`^${escaped}$`);
}

describe('npm start: output and stopping', function () {
  this.timeout(60_000);
  const dirs: string[] = [];
  const servers: number[] = [];
  after(async () => {
    // A server a failed test left behind must not outlive the suite.
    for (const pid of servers) if (isRunning(pid)) process.kill(pid, 'SIGKILL');
    for (const dir of dirs) await rm(dir, { recursive: true, force: true });
  });

  for (const signal of ['SIGTERM', 'SIGKILL'] as const) {
    it(`a ${signal} to the npm process stops the server and frees its port`, async () => {
      const dataDir = await mkdtemp(join(tmpdir(), 'folio-npm-start-'));
      dirs.push(dataDir);
      // The README's defaults: HOST 0.0.0.0 prints http://localhost.
      const started = await serveFolio({ FOLIO_DATA_DIR: dataDir, HOST: '0.0.0.0' }, { via: 'npm' });
      const port = Number(new URL(started.url).port);
      const server = readHolderPid(dataDir);
      expect(server, 'the server records its PID').to.be.a('number');
      servers.push(server as number);

      if (signal === 'SIGTERM') {
        // What the README shows is what npm start prints, but for the port, the data directory
        // and the generated secrets.
        const version = JSON.parse(readFileSync('package.json', 'utf8')).version as string;
        const printed = started
          .stdout()
          .replaceAll(`localhost:${port}`, 'localhost:3000')
          .replaceAll(dataDir, './data')
          .replace(`folio@${version} `, 'folio@0.1.0 ')
          .trim()
          .split('\n');
        const shown = readmeStartupBlock();
        expect(printed, started.stdout()).to.have.length(shown.length);
        shown.forEach((line, i) => {
          expect(printed[i], `README line ${i + 1}`).to.match(linePattern(line));
        });
      }

      started.child.kill(signal);
      // Stopped cleanly: the pid file goes last (after the store closed) and the port is shut.
      // Not "the process is gone": once npm is gone the server's exit leaves a zombie until init
      // reaps it, which some sandboxes do late and show no state for.
      await until(
        async () => readHolderPid(dataDir) === null && !(await accepts(port)),
        () => `a clean shutdown; the server printed:\n${started.output()}\n${processTree()}`,
        10_000,
      );
      // SIGTERM reaches the server through npm (the script execs it); SIGKILL ends npm alone,
      // and the server's watch of its parent stops it.
      const reason = signal === 'SIGTERM' ? 'SIGTERM received' : 'npm (the parent process) exited';
      expect(started.stdout()).to.include(`${reason}: closing...`);
    });
  }

  it('reads the parent process id from /proc/<pid>/stat, whatever the command name', () => {
    expect(parseProcStat('4242 (node) S 4241 4242 100 0 -1 4194304')).to.deep.equal({
      state: 'S',
      ppid: 4241,
    });
    expect(parseProcStat('7 (my (odd) name) Z 1 7 7 0')).to.deep.equal({ state: 'Z', ppid: 1 });
    expect(parseProcStat('garbage')).to.equal(null);
    expect(isRunning(process.pid)).to.equal(true);
  });
});
