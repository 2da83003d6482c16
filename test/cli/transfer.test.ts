/**
 * `folio import` and `folio export` end to end: the real command in its own process against a
 * real server, without a terminal (one JSON summary line) and in a pseudo-terminal (progress
 * bar) made by util-linux `script`.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { runFolio } from '../support/cli.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { forEachStore } from '../support/stores.js';
import { transferClient } from '../transfer/client.js';

/** The plan takes 7 documents and 1,500 bytes per request: files below are cut into many parts. */
const config = { plans: { free: { maxImportDocuments: 7, maxImportBytes: 1500, maxExportDocuments: 50 } } };

let dir: string;
before(async () => {
  dir = await mkdtemp(join(tmpdir(), 'folio-cli-'));
});
after(async () => {
  await rm(dir, { recursive: true, force: true });
});

function csvRows(n: number, start = 0): string {
  const rows = Array.from({ length: n }, (_, i) => `r${start + i},${start + i},"name, ${start + i}"`);
  return `_id,n,name\r\n${rows.join('\r\n')}\r\n`;
}

async function file(name: string, content: string): Promise<string> {
  const path = join(dir, name);
  await writeFile(path, content);
  return path;
}

function envFor(server: TestServer, key: string, project: string): Record<string, string> {
  return { FOLIO_URL: server.url, FOLIO_API_KEY: key, FOLIO_PROJECT: project };
}

describe('folio help', function () {
  this.timeout(30_000);
  it('with no arguments prints help and starts no server', async () => {
    const { code, out } = await runFolio([], {});
    expect(code).to.equal(0);
    expect(out).to.include('Usage: folio <command>');
    expect(out).to.not.include('listening');
  });

  it('--help and per-command help', async () => {
    expect((await runFolio(['--help'], {})).out).to.include('import FILE');
    expect((await runFolio(['help', 'export'], {})).out).to.include("--filter 'FIELD[OP]=V'");
    const importHelp = await runFolio(['import', '--help'], {});
    expect(importHelp.code).to.equal(0);
    expect(importHelp.out).to.include('--on-conflict MODE');
    expect((await runFolio(['export', '-h'], {})).out).to.include('Usage: folio export');
  });

  it('usage mistakes exit 2 naming the problem', async () => {
    const noKey = await runFolio(['import', 'x.csv'], { FOLIO_API_KEY: '', FOLIO_PROJECT: 'p' });
    expect(noKey.code).to.equal(2);
    expect(noKey.err).to.include('FOLIO_API_KEY');
    const badFlag = await runFolio(['export', '--nope'], {});
    expect(badFlag.code).to.equal(2);
    const format = await runFolio(['import', 'data.txt', '--key', 'k', '-p', 'p'], {});
    expect(format.code).to.equal(2);
    expect(format.err).to.include('--format');
  });
});

forEachStore(
  'folio import/export',
  (ctx) => {
    const env = () => envFor(ctx.server, ctx.tenant.key, ctx.tenant.project);
    const api = () => transferClient(ctx);
    this_timeout();
    /** Writes `count` rows shaped as csvRows makes them, so each case stands alone (`--grep`). */
    const seedRows = async (collection: string, count: number) => {
      for (let i = 0; i < count; i++)
        await api().req('PUT', `/${collection}/r${i}`, { body: { n: i, name: `name, ${i}` } });
    };

    it('imports a CSV larger than one request allows, in parts; prints one JSON line when not on a terminal', async () => {
      const path = await file('people.csv', csvRows(60));
      const { code, out, err } = await runFolio(['import', path], env());
      expect(code, err).to.equal(0);
      const lines = out.trim().split('\n');
      expect(lines).to.have.length(1);
      const summary = JSON.parse(lines[0]!);
      expect(summary).to.include({ ok: true, imported: 60, skipped: 0, failed: 0, total: 60 });
      // 7 documents per request at most: at least 9 requests.
      expect(summary.requests).to.be.greaterThanOrEqual(9);
      expect((await api().req('GET', '/people?count=true')).body.count).to.equal(60);
      expect((await api().req('GET', '/people/r59')).body.name).to.equal('name, 59');
    });

    it('NDJSON and JSON files too, with the collection and format given', async () => {
      const nd = await file(
        'a.ndjson',
        Array.from({ length: 20 }, (_, i) => JSON.stringify({ i })).join('\n'),
      );
      const ndRun = await runFolio(['import', nd, '-c', 'fromnd'], env());
      expect(JSON.parse(ndRun.out).imported).to.equal(20);
      const json = await file(
        'b.data',
        JSON.stringify(Array.from({ length: 15 }, (_, i) => ({ _id: `j${i}` }))),
      );
      const jsonRun = await runFolio(['import', json, '-c', 'fromjson', '--format', 'json'], env());
      expect(JSON.parse(jsonRun.out)).to.include({ imported: 15, total: 15 });
    });

    it('record errors make the exit code 1 and are numbered as in the whole file', async () => {
      const path = await file(
        'bad.ndjson',
        ['{"a":1}', '{"a":2}', '', '{"a":', ...Array.from({ length: 10 }, () => '{"b":1}'), '{"$x":1}'].join(
          '\n',
        ),
      );
      const { code, out } = await runFolio(['import', path, '-c', 'witherrors'], env());
      expect(code).to.equal(1);
      const summary = JSON.parse(out);
      expect(summary).to.include({ ok: false, imported: 12, failed: 2, total: 14 });
      expect(summary.errors.map((e: { index: number; line: number }) => [e.index, e.line])).to.deep.equal([
        [2, 4],
        [13, 15],
      ]);
    });

    it('a refused part stops the import: earlier parts are in, and --on-conflict skip resumes', async () => {
      await api().req('PUT', '/resume/r10', { body: { n: 'taken' } });
      const path = await file('resume.csv', csvRows(20));
      const first = await runFolio(['import', path, '-c', 'resume'], env());
      expect(first.code).to.equal(1);
      expect(first.err).to.include('409 conflict');
      const summary = JSON.parse(first.out);
      expect(summary.ok).to.equal(false);
      expect(summary.resume).to.include('--on-conflict skip');
      const partial = await api().all('resume');
      expect(partial.length).to.equal(summary.imported + 1);
      const again = await runFolio(['import', path, '-c', 'resume', '--on-conflict', 'skip'], env());
      expect(again.code).to.equal(0);
      expect(JSON.parse(again.out)).to.include({
        imported: 20 - 1 - summary.imported,
        skipped: summary.imported + 1,
      });
      expect(await api().all('resume')).to.have.length(20);
    });

    it('exports with filters and sort to a file whose extension picks the format', async () => {
      await seedRows('exportcsv', 60);
      const out = join(dir, 'odd.csv');
      const res = await runFolio(
        [
          'export',
          '-c',
          'exportcsv',
          '--filter',
          'n[gte]=50',
          '--filter',
          'n[lt]=55',
          '--sort=-n',
          '--out',
          out,
        ],
        env(),
      );
      expect(res.code, res.err).to.equal(0);
      expect(JSON.parse(res.out)).to.include({ ok: true, documents: 5, out });
      const lines = (await readFile(out, 'utf8')).trim().split('\r\n');
      expect(lines[0]).to.equal('_id,n,name,$createdAt,$updatedAt,$version');
      expect(lines.slice(1).map((l) => l.split(',')[0])).to.deep.equal(['r54', 'r53', 'r52', 'r51', 'r50']);
    });

    it('exports to standard output (summary on stderr), and fails with exit 1 over the plan', async () => {
      // Written in another order than they are asked for.
      for (const i of [...Array(20).keys()].reverse())
        await api().req('PUT', `/exportnd/d${i}`, { body: { i } });
      const res = await runFolio(['export', '-c', 'exportnd', '-f', 'ndjson', '--sort', 'i'], env());
      expect(res.code).to.equal(0);
      expect(
        res.out
          .trim()
          .split('\n')
          .map((l) => JSON.parse(l).i),
      ).to.deep.equal([...Array(20).keys()]);
      expect(JSON.parse(res.err)).to.include({ ok: true, documents: 20 });
      // The plan exports 50 documents at most.
      await seedRows('exportover', 51);
      const over = await runFolio(['export', '-c', 'exportover', '--out', join(dir, 'all.json')], env());
      expect(over.code).to.equal(1);
      expect(over.err).to.include('More than 50 documents match');
    });

    it('CSV export escapes formulas unless --no-formula-escape; an unterminated quote is numbered as in the file', async () => {
      await api().req('PUT', '/formulas/f1', { body: { t: '=1+2', n: -5 } });
      const escaped = join(dir, 'escaped.csv');
      const plain = join(dir, 'plain.csv');
      expect((await runFolio(['export', '-c', 'formulas', '--out', escaped], env())).code).to.equal(0);
      expect(
        (await runFolio(['export', '-c', 'formulas', '--out', plain, '--no-formula-escape'], env())).code,
      ).to.equal(0);
      expect((await readFile(escaped, 'utf8')).split('\r\n')[1]).to.match(/^f1,'=1\+2,-5,/);
      expect((await readFile(plain, 'utf8')).split('\r\n')[1]).to.match(/^f1,=1\+2,-5,/);
      // 20 rows go in parts of 7; the quote opened on line 12 takes the rest of the file.
      const rows = ['_id,n', ...Array.from({ length: 20 }, (_, i) => `r${i},${i}`)];
      rows[11] = '"r10,10';
      const path = await file('open-quote.csv', `${rows.join('\r\n')}\r\n`);
      const { code, out } = await runFolio(['import', path, '-c', 'openquote'], env());
      expect(code).to.equal(1);
      const summary = JSON.parse(out);
      expect(summary).to.include({ imported: 10, failed: 1, total: 11 });
      expect(summary.errors[0]).to.include({ index: 10, line: 12, code: 'invalid_row' });
    });

    it('a wrong key fails with exit 1 and the server message', async () => {
      const res = await runFolio(['import', await file('k.csv', csvRows(2)), '-c', 'nokey'], {
        ...env(),
        FOLIO_API_KEY: 'folio_sk_test_wrong',
      });
      expect(res.code).to.equal(1);
      expect(res.err).to.include('401 unauthorized');
    });

    it('shows a progress bar with documents, bytes, rate and ETA in a terminal', async () => {
      const path = await file('tty.csv', csvRows(30, 1000));
      const command = `${process.execPath} bin/folio.js import ${path} -c ttyimport; echo "exit=$?"`;
      const { stdout } = await promisify(execFile)('script', ['-qfec', command, '/dev/null'], {
        env: { ...process.env, ...env() },
      });
      expect(stdout).to.match(/importing \|[█░]+\| 100% \| 30 docs \| [\d.]+ (B|KiB) \| \d+ docs\/s \| ETA/);
      expect(stdout).to.include('30 imported, 0 skipped, 0 failed of 30 records');
      expect(stdout).to.include('exit=0');
    });
  },
  { config },
);

function this_timeout(): void {
  // Each case spawns the command (about a second of start-up under tsx).
  beforeEach(function () {
    this.timeout(60_000);
  });
}

describe('folio import against real rate limits', function () {
  this.timeout(60_000);
  let server: TestServer;
  before(async () => {
    server = await startTestServer({
      realRateLimits: true,
      config: { plans: { free: { requestsPerSecond: 2, maxImportDocuments: 5 } } },
    });
  });
  after(async () => server?.close());

  it('waits out 429 responses (Retry-After) and imports everything', async () => {
    const tenant = await server.tenant();
    const path = await file('limited.csv', csvRows(20));
    const { code, out, err } = await runFolio(
      ['import', path, '-c', 'limited'],
      envFor(server, tenant.key, tenant.project),
    );
    expect(code, err).to.equal(0);
    expect(JSON.parse(out)).to.include({ imported: 20, total: 20 });
    expect(JSON.parse(out).requests).to.be.greaterThanOrEqual(4);
  });
});
