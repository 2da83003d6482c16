/**
 * The README's client example runs as written, in a plain `node` process with no build step and
 * no loader (the library is plain JavaScript), against a real server: it creates, lists, and
 * its subscription prints the next change.
 */
import { execFile } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { startTestServer, type TestServer } from '../support/server.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

describe('client library: the README example', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(() => server?.close());

  it('runs as written with node alone', async function () {
    this.timeout(30_000);
    const readme = readFileSync(join(ROOT, 'README.md'), 'utf8');
    const code = /```js\n([\s\S]*?)```/.exec(readme.slice(readme.indexOf('### Client library')))?.[1];
    expect(code).to.be.a('string');
    const tenant = await server.tenant({ plan: 'pro' });
    const printed = [
      // What it prints is kept, and a change is written until the subscription printed one.
      'const lines = []; const print = console.log; console.log = (...a) => { lines.push(a.join(" ")); print(...a); };',
      (code as string)
        .replace("'./client/folio.js'", JSON.stringify(join(ROOT, 'client/folio.js')))
        .replace("'http://localhost:3000'", JSON.stringify(server.url))
        .replace("project('default')", `project(${JSON.stringify(tenant.project)})`),
      'while (lines.length === 0) { await posts.create({ title: "live", stars: 0 }); await new Promise((r) => setTimeout(r, 200)); }',
      'stop();',
      'print(JSON.stringify({ total: page.meta.total, first: page.data[0].title, change: lines[0].split(" ")[0] }));',
    ].join('\n');
    mkdirSync(join(ROOT, 'test-output'), { recursive: true });
    const file = join(ROOT, 'test-output', `readme-client-${process.pid}.mjs`);
    writeFileSync(file, printed);
    const { stdout } = await promisify(execFile)(process.execPath, [file], {
      env: { ...process.env, FOLIO_API_KEY: tenant.key },
      timeout: 20_000,
    }).finally(() => rmSync(file, { force: true }));
    const last = JSON.parse(stdout.trim().split('\n').at(-1) as string);
    expect(last).to.deep.equal({ total: 1, first: 'hello', change: 'document.created' });
  });
});
