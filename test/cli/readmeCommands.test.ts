/**
 * The README's shell blocks, and the docs' curl examples, run as written against a fresh server
 * started with `npm start`: every fenced `sh` block is either run or listed below with the
 * reason it is not, so a new example is run from the day it is written. The blocks run in one
 * bash, in order (the walk-through's variables carry from block to block, as in a terminal),
 * with `set -e -o pipefail` and curl failing on an HTTP error, so a 404, a curl error hidden by
 * `-s` or a failed `folio` command fails the test naming the block.
 *
 * What the test changes, and only that: the placeholder the README asks the reader to fill
 * (the password printed on first start) and the port (a free one, not 3000, since other
 * suites run beside this one); a change stream example (`curl -N`) runs for 3 s and must have
 * opened. The server runs with FOLIO_WEBHOOKS_ALLOW_PRIVATE_TARGETS=true
 * because CI machines resolve no public names (the webhook example registers example.com).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { expect } from 'chai';
import { devAccount, type FolioProcess, serveFolio, stopFolio } from '../support/folioProcess.js';

interface Block {
  file: string;
  line: number;
  text: string;
}

/** The fenced `sh`/`bash` blocks of a markdown file, with their first line number. */
function shellBlocks(file: string, markdown: string): Block[] {
  const blocks: Block[] = [];
  const lines = markdown.split('\n');
  for (let i = 0; i < lines.length; i += 1) {
    const open = /^(\s*)```(sh|bash|shell)\s*$/.exec(lines[i] as string);
    if (!open) continue;
    const indent = (open[1] as string).length;
    const body: string[] = [];
    let j = i + 1;
    while (j < lines.length && !/^\s*```\s*$/.test(lines[j] as string)) {
      body.push((lines[j] as string).slice(indent));
      j += 1;
    }
    blocks.push({ file, line: i + 1, text: body.join('\n') });
    i = j;
  }
  return blocks;
}

/** Blocks not run, each recognised by a line of it, and why. */
const NOT_RUN: Array<{ file: string; contains: string; why: string }> = [
  {
    file: 'README.md',
    contains: 'npm install\nnpm start',
    why: 'the test starts the server with npm start itself',
  },
  { file: 'README.md', contains: "MONGODB_URI='mongodb://db1", why: 'no MongoDB replica set here' },
  {
    file: 'README.md',
    contains: 'PORT=8080 FOLIO_DATA_DIR',
    why: 'a second server; the test runs one already',
  },
  { file: 'README.md', contains: 'npm test              #', why: 'the test suite itself' },
  { file: 'docs/mongodb.md', contains: '', why: 'MongoDB set-up (Docker, mongod)' },
  {
    file: 'docs/collections.md',
    contains: 'openapi-typescript orders.openapi.json',
    why: 'generates a client with openapi-typescript, a tool the reader installs',
  },
  {
    file: 'docs/import-export.md',
    contains: 'FOLIO_URL=https://folio.example.com',
    why: 'names a remote server and files the reader has',
  },
];

/** What the docs' examples read, as a reader would have it in the working directory. */
const PEOPLE_CSV = `name,age\n${Array.from({ length: 20 }, (_, i) => `person ${i},${20 + i}`).join('\n')}\n`;

const DOC_FILES = [
  'README.md',
  'docs/import-export.md',
  'docs/streams.md',
  'docs/mongodb.md',
  'docs/collections.md',
];

describe('README and docs commands run as written on a fresh server', function () {
  this.timeout(180_000);
  let dataDir: string;
  let workDir: string;
  let server: FolioProcess | undefined;

  before(async () => {
    dataDir = await mkdtemp(join(tmpdir(), 'folio-readme-data-'));
    workDir = await mkdtemp(join(tmpdir(), 'folio-readme-work-'));
    // The README's `node bin/folio.js` runs in the clone: the working directory sees its bin/.
    await symlink(resolve('bin'), join(workDir, 'bin'));
    await writeFile(join(workDir, 'people.csv'), PEOPLE_CSV);
  });
  after(async () => {
    if (server) await stopFolio(server);
    await rm(dataDir, { recursive: true, force: true });
    await rm(workDir, { recursive: true, force: true });
  });

  it('every shell block is run or skipped for a stated reason, and the run ones pass', async () => {
    const blocks: Block[] = [];
    for (const file of DOC_FILES) blocks.push(...shellBlocks(file, await readFile(file, 'utf8')));
    const run: Block[] = [];
    const skippedBy = new Set<(typeof NOT_RUN)[number]>();
    for (const block of blocks) {
      const skip = NOT_RUN.find((s) => s.file === block.file && block.text.includes(s.contains));
      if (skip) skippedBy.add(skip);
      else run.push(block);
    }
    // A skip rule that matches nothing is stale: the block it excused changed or went away.
    expect(
      NOT_RUN.filter((s) => !skippedBy.has(s)).map((s) => `${s.file}: ${s.contains}`),
      'stale skip rules',
    ).to.deep.equal([]);
    // Only docs' curl examples are run outside the README (other docs blocks need what they name).
    const runnable = run.filter((b) => b.file === 'README.md' || /\bcurl\b/.test(b.text));
    expect(runnable.map((b) => `${b.file}:${b.line}`)).to.deep.equal(run.map((b) => `${b.file}:${b.line}`));

    server = await serveFolio(
      { FOLIO_DATA_DIR: dataDir, FOLIO_WEBHOOKS_ALLOW_PRIVATE_TARGETS: 'true' },
      { via: 'npm' },
    );
    // devAccount also checks that the first start printed its test key.
    const { password } = devAccount(server);

    // The README's placeholders, filled as the reader is told to; each must be found.
    const fills: Array<[string, string]> = [["export PASSWORD='...'", `export PASSWORD='${password}'`]];
    let script = 'set -e -o pipefail\ncurl() { command curl --fail-with-body "$@"; }\nexport -f curl\n';
    for (const [index, block] of run.entries()) {
      let text = block.text.replaceAll('http://localhost:3000', server.url);
      for (const [placeholder, value] of fills) text = text.replace(placeholder, value);
      script += `echo "### ${block.file}:${block.line}" >&2\n`;
      if (/\bcurl -N\b/.test(text)) {
        // A change stream never ends by itself: it runs for 3 s and must have opened (retry:).
        const file = `stream-${index}.sh`;
        await writeFile(join(workDir, file), `set -e\n${text}\n`);
        script += `status=0; timeout 3 bash ${file} > ${file}.out || status=$?\n`;
        script += `[ "$status" = 124 ] && grep -q '^retry: ' ${file}.out\n`;
      } else {
        script += `${text}\n`;
      }
    }
    for (const [placeholder] of fills) {
      expect(
        run.some((b) => b.text.includes(placeholder)),
        placeholder,
      ).to.equal(true);
    }

    const child = spawn('bash', ['-c', script], {
      cwd: workDir,
      env: { ...process.env, FOLIO_DATA_DIR: dataDir, FOLIO_LOG_LEVEL: 'silent' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => {
      out += chunk.toString();
    });
    child.stderr.on('data', (chunk: Buffer) => {
      err += chunk.toString();
    });
    const [code] = (await once(child, 'close')) as [number | null];
    const lastBlock = [...err.matchAll(/### (\S+)/g)].at(-1)?.[1];
    expect(code, `failed in ${lastBlock}\n--- stderr\n${err}\n--- stdout\n${out.slice(-3000)}`).to.equal(0);

    // What the walk-through promises along the way.
    expect(out).to.include('"plan":"pro"');
    expect(out).to.match(/"changes":\[/);
    expect(out).to.match(/HTTP\/1\.1 204/);
    const exported = await readFile(join(workDir, 'people.csv'), 'utf8');
    expect(exported.split('\n')[0]).to.include('age');
  });
});
