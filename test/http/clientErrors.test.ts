/**
 * Node's own parser and timeout errors, over a raw TCP socket (fetch cannot send broken HTTP):
 * each is a JSON error with `Connection: close`, and a request that never arrives whole does not
 * hold its connection.
 */
import { once } from 'node:events';
import { maxHeaderSize } from 'node:http';
import { connect, type Socket } from 'node:net';
import { expect } from 'chai';
import { clientErrorAnswer, clientErrorResponse } from '../../src/http/clientErrors.js';
import { REQUEST_ID_PATTERN } from '../../src/http/requestIds.js';
import { serverTimeouts } from '../../src/http/serverTimeouts.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { eventually } from '../support/timeout.js';

const REQUEST_TIMEOUT_MS = 1500;
const HEADERS_TIMEOUT_MS = 400;

interface RawAnswer {
  status: number;
  headers: Map<string, string>;
  body: string;
  /** Milliseconds from the first byte sent to the connection's end. */
  ms: number;
}

/** Send `chunks` (a number is a pause in ms), then read until the server ends the connection. */
async function raw(server: TestServer, chunks: Array<string | number>): Promise<RawAnswer> {
  const url = new URL(server.url);
  const socket: Socket = connect(Number(url.port), url.hostname);
  await once(socket, 'connect');
  let received = '';
  socket.on('data', (chunk: Buffer) => {
    received += chunk.toString('latin1');
  });
  const closed = once(socket, 'close');
  const start = Date.now();
  for (const chunk of chunks) {
    if (typeof chunk === 'number') await new Promise((r) => setTimeout(r, chunk));
    else if (!socket.destroyed) socket.write(chunk);
  }
  const timer = setTimeout(() => socket.destroy(new Error('the server never closed the connection')), 10_000);
  await closed;
  clearTimeout(timer);
  const ms = Date.now() - start;
  const split = received.indexOf('\r\n\r\n');
  const [statusLine = '', ...headerLines] = received.slice(0, split).split('\r\n');
  const headers = new Map(
    headerLines.map((line) => {
      const colon = line.indexOf(':');
      return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()] as [string, string];
    }),
  );
  return { status: Number(statusLine.split(' ')[1]), headers, body: received.slice(split + 4), ms };
}

function expectJsonError(answer: RawAnswer, status: number, code: string, requestId?: string): void {
  expect(answer.status, answer.body).to.equal(status);
  expect(answer.headers.get('content-type')).to.equal('application/json; charset=utf-8');
  expect(answer.headers.get('connection')).to.equal('close');
  // A request the app already holds keeps its id (the access log's); others get a new one.
  if (requestId) expect(answer.headers.get('x-request-id')).to.equal(requestId);
  else expect(answer.headers.get('x-request-id')).to.match(REQUEST_ID_PATTERN);
  expect(Number(answer.headers.get('content-length'))).to.equal(Buffer.byteLength(answer.body));
  const body = JSON.parse(answer.body);
  expect(body.error.code).to.equal(code);
  expect(body.error.message).to.be.a('string').and.not.equal('');
}

describe('HTTP: parser errors and request timeouts answer JSON', function () {
  this.timeout(30_000);
  let server: TestServer;
  const logLines: string[] = [];
  before(async () => {
    server = await startTestServer({
      config: { http: { requestTimeoutMs: REQUEST_TIMEOUT_MS, headersTimeoutMs: HEADERS_TIMEOUT_MS } },
      logStream: { write: (line: string) => logLines.push(line) },
    });
  });
  after(async () => {
    await server.close();
  });

  it('headers larger than Node accepts → 431 headers_too_large', async () => {
    const big = 'a'.repeat(maxHeaderSize + 1);
    const answer = await raw(server, [`GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: ${big}\r\n\r\n`]);
    expectJsonError(answer, 431, 'headers_too_large');
  });

  it('headers just under the limit are served', async () => {
    // Request line and other headers take a few dozen bytes of the limit.
    const header = 'a'.repeat(maxHeaderSize - 200);
    const res = await server.request('GET', '/healthz', { headers: { 'X-Big': header } });
    expect(res.status).to.equal(200);
  });

  it('malformed framing → 400 bad_request: a garbage request line, two different Content-Lengths, a bad chunk', async () => {
    expectJsonError(await raw(server, ['HELLO THERE\r\n\r\n']), 400, 'bad_request');
    expectJsonError(
      await raw(server, [
        'POST /api/auth/login HTTP/1.1\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}',
      ]),
      400,
      'bad_request',
    );
    expectJsonError(
      await raw(server, [
        'POST /api/auth/login HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n',
      ]),
      400,
      'bad_request',
    );
  });

  it('a Content-Length that is never delivered → 408 request_timeout once the request timeout passes', async () => {
    const answer = await raw(server, [
      'POST /api/auth/login HTTP/1.1\r\nHost: x\r\nX-Request-Id: late-body-1\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"email":',
    ]);
    expectJsonError(answer, 408, 'request_timeout', 'late-body-1');
    expect(answer.ms).to.be.at.least(REQUEST_TIMEOUT_MS - 20);
    expect(answer.ms).to.be.below(REQUEST_TIMEOUT_MS + 2000);
    // The access log records what the client got, not the failed body read Koa saw.
    const logged = await eventually(async () => {
      const line = logLines
        .map((l) => JSON.parse(l))
        .find((l) => l.requestId === 'late-body-1' && l.msg === 'request');
      expect(line, 'access log line').to.not.equal(undefined);
      return line;
    });
    expect(logged.status).to.equal(408);
  });

  it('headers that stop half-way → 408 after the headers timeout, before the request timeout', async () => {
    const answer = await raw(server, ['GET /healthz HTTP/1.1\r\nHost: x\r\n']);
    expectJsonError(answer, 408, 'request_timeout');
    expect(answer.ms).to.be.at.least(HEADERS_TIMEOUT_MS - 20);
    expect(answer.ms).to.be.below(REQUEST_TIMEOUT_MS);
  });

  it('a slow body that arrives whole within the request timeout is served', async () => {
    const body = JSON.stringify({ email: 'nobody@example.test', password: 'not the password' });
    const head = `POST /api/auth/login HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\nConnection: close\r\n\r\n`;
    const answer = await raw(server, [head, body.slice(0, 10), 300, body.slice(10, 30), 300, body.slice(30)]);
    expect(answer.status, answer.body).to.equal(401);
    expect(JSON.parse(answer.body).error.code).to.equal('unauthorized');
  });

  it('maps each parser error to its answer; a reset connection gets none', () => {
    const answer = (code: string) => clientErrorAnswer(Object.assign(new Error(code), { code }));
    expect(answer('ECONNRESET')).to.equal(null);
    expect(answer('HPE_HEADER_OVERFLOW')?.status).to.equal(431);
    expect(answer('HPE_CHUNK_EXTENSIONS_OVERFLOW')?.status).to.equal(413);
    expect(answer('ERR_HTTP_REQUEST_TIMEOUT')?.status).to.equal(408);
    expect(answer('HPE_INVALID_METHOD')?.status).to.equal(400);
    const response = clientErrorResponse({ status: 408, code: 'request_timeout', message: 'late' }, 'req_1');
    expect(response.startsWith('HTTP/1.1 408 Request Timeout\r\n')).to.equal(true);
  });

  it('Node checks timeouts often enough to be punctual: a quarter of the shortest, within 50 ms..1 s', () => {
    const interval = (requestTimeoutMs: number, headersTimeoutMs: number) =>
      serverTimeouts({ requestTimeoutMs, headersTimeoutMs, keepAliveTimeoutMs: 5000 })
        .connectionsCheckingInterval;
    expect(interval(30_000, 10_000)).to.equal(1000);
    expect(interval(1500, 400)).to.equal(100);
    expect(interval(100, 100)).to.equal(50);
    expect(
      serverTimeouts({ requestTimeoutMs: 30_000, headersTimeoutMs: 10_000, keepAliveTimeoutMs: 5000 }),
    ).to.include({
      requestTimeout: 30_000,
      headersTimeout: 10_000,
      keepAliveTimeout: 5000,
    });
  });
});

describe('HTTP: a client that gives up on its request body is no server error', function () {
  this.timeout(30_000);
  const TOKEN = 'metrics-token-for-aborts';
  let server: TestServer;
  const logLines: string[] = [];
  before(async () => {
    server = await startTestServer({
      config: {
        http: { requestTimeoutMs: REQUEST_TIMEOUT_MS, headersTimeoutMs: HEADERS_TIMEOUT_MS },
        metrics: { enabled: true, token: TOKEN },
      },
      logStream: { write: (line: string) => logLines.push(line) },
    });
  });
  after(async () => {
    await server.close();
  });

  it('an import cut off by the client, or by the request timeout (408): no 5xx counted, no error logged', async () => {
    const tenant = await server.tenant();
    const record = '{"name":"a slow record"}\n';
    const head = (id: string) =>
      `POST /${tenant.project}/slow/_import HTTP/1.1\r\nHost: x\r\nX-Request-Id: ${id}\r\n` +
      `Authorization: Bearer ${tenant.key}\r\nContent-Type: application/x-ndjson\r\nContent-Length: 100000\r\n\r\n`;
    // One that aborts mid-body: it sends part of it, then closes its connection.
    const url = new URL(server.url);
    const socket = connect(Number(url.port), url.hostname);
    await once(socket, 'connect');
    socket.write(head('aborts-1') + record.repeat(40));
    await new Promise((r) => setTimeout(r, 300));
    socket.destroy();
    // One that stalls past the request timeout: 408.
    const stalled = await raw(server, [head('stalls-1') + record.repeat(40)]);
    expect(stalled.status, stalled.body).to.equal(408);
    const accessed = await eventually(async () => {
      const lines = logLines.map(
        (l) => JSON.parse(l) as { requestId?: string; msg?: string; status?: number },
      );
      const both = lines.filter((l) => l.msg === 'request' && /^(aborts|stalls)-1$/.test(l.requestId ?? ''));
      expect(both).to.have.length(2);
      return both;
    });
    const metrics = await server.request('GET', '/metrics', { key: TOKEN });
    const imports = metrics.text
      .split('\n')
      .filter((line) => line.startsWith('folio_http_requests_total{') && line.includes('_import'));
    console.log(
      `      access log: ${accessed.map((l) => `${l.requestId} ${l.status}`).join(', ')}; metrics: ${imports.join(' | ')}`,
    );
    const errors = logLines
      .map((l) => JSON.parse(l) as { level: number; msg?: string })
      .filter((l) => l.level >= 50);
    console.log(`      log lines at level ≥ 50: ${errors.map((l) => l.msg).join(', ') || 'none'}`);
    expect(imports.filter((line) => /status="5\d\d"/.test(line))).to.deep.equal([]);
    expect(imports.some((line) => /status="408"/.test(line))).to.equal(true);
    expect(errors).to.deep.equal([]);
  });
});
