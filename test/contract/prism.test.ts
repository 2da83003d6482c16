/**
 * The contract as a tool no one here wrote checks it: Stoplight Prism's validating proxy in
 * front of a running Folio, while the sweep of every operation and its documented errors
 * (test/support/sweep.ts) passes through it. Prism reports what breaks the OpenAPI document in
 * each answer's `sl-violations` header; the sweep must produce none in any response, and no
 * request violation in a call meant to succeed (the typed client sends what the document says).
 * `npm run test:contract` runs this file alone.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import type { TestServer } from '../support/server.js';
import { type SweepStep, startSweptServer, sweepApi } from '../support/sweep.js';

const PRISM = fileURLToPath(new URL('../../node_modules/.bin/prism', import.meta.url));

interface Violation {
  location: string[];
  severity: string;
  code?: string | number;
  message: string;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as { port: number };
      probe.close(() => resolve(port));
    });
  });
}

/** Prism started on `port`, resolved once it answers (it listens after parsing the document). */
async function startPrism(document: string, upstream: string, port: number): Promise<ChildProcess> {
  const prism = spawn(PRISM, ['proxy', document, upstream, '--host', '127.0.0.1', '--port', String(port)], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, NO_COLOR: '1' },
  });
  let output = '';
  prism.stdout?.on('data', (chunk) => {
    output += String(chunk);
  });
  prism.stderr?.on('data', (chunk) => {
    output += String(chunk);
  });
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (prism.exitCode !== null) throw new Error(`prism exited: ${output}`);
    try {
      await fetch(`http://127.0.0.1:${port}/healthz`);
      return prism;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  prism.kill();
  throw new Error(`prism did not start: ${output}`);
}

function violationsOf(step: SweepStep): Violation[] {
  const header = step.headers.get('sl-violations');
  return header ? (JSON.parse(header) as Violation[]) : [];
}

describe('contract: Prism’s validating proxy in front of Folio @slow', function () {
  // Prism parses the document and compiles its schemas before it listens.
  this.timeout(120_000);
  let server: TestServer;
  let prism: ChildProcess | undefined;
  let dir: string;
  let prismUrl: string;

  before(async () => {
    server = await startSweptServer();
    dir = await mkdtemp(join(tmpdir(), 'folio-contract-'));
    const document = join(dir, 'openapi.json');
    await writeFile(document, (await server.request('GET', '/openapi.json')).text);
    const port = await freePort();
    prism = await startPrism(document, server.url, port);
    prismUrl = `http://127.0.0.1:${port}`;
  });

  after(async () => {
    prism?.kill();
    await server?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  it('every operation and documented error passes through with 0 response violations', async () => {
    // The event stream's 200 never ends, and Prism buffers a response to validate it.
    const steps = await sweepApi(prismUrl, { viaProxy: true });
    expect(steps.length).to.be.greaterThan(100);
    const inResponses: string[] = [];
    const inRequests: string[] = [];
    for (const step of steps) {
      for (const v of violationsOf(step)) {
        const line = `${step.operation} ${step.status}: ${v.location.join('.')} ${v.message}`;
        if (v.location[0] === 'response') inResponses.push(line);
        // Prism checks a request body against the operation's first JSON media type, whatever
        // the Content-Type: a JSON patch (`application/json-patch+json`, an array) is checked
        // as the merge patch listed before it. Folio took it (200), as the document says.
        else if (step.operation === 'patchDocument (JSON patch)' && v.location.join('.') === 'request.body')
          continue;
        else if (step.status < 300 && v.severity === 'Error') inRequests.push(line);
      }
    }
    expect(inResponses, inResponses.join('\n')).to.deep.equal([]);
    expect(inRequests, inRequests.join('\n')).to.deep.equal([]);
  });
});
