/** The access log's hand-formatted line against the line pino itself writes for the same call. */
import { expect } from 'chai';
import fc from 'fast-check';
import { pino } from 'pino';
import { type AccessFields, formatAccessLine, processBindings } from '../../src/http/accessLine.js';

const TIME = 1_795_646_106_448;

/** What `logger.info(fields, 'request')` writes, at a fixed time, with pino's default bindings. */
function pinoLine(fields: AccessFields): string {
  let line = '';
  const logger = pino(
    { level: 'info', timestamp: () => `,"time":${TIME}` },
    { write: (s: string) => (line = s) },
  );
  logger.info({ ...fields }, 'request');
  return line;
}

const fields: AccessFields = {
  requestId: 'req_9f199680b7fc0573-5ega',
  method: 'GET',
  path: '/default/notes/doc_01M8ADFVB2JM99SKFKZJ7GCHE0',
  status: 200,
  ms: 0.024997000000439584,
  key: 'key_01M8ADFV3KWJ4DYQ8XBAE2YKP4',
};

describe('access log line', () => {
  it('is byte for byte the line pino writes for the same fields', () => {
    expect(formatAccessLine(processBindings(), TIME, fields)).to.equal(pinoLine(fields));
  });

  it('leaves the key out when the request had none, as pino leaves out an undefined field', () => {
    const noKey = { ...fields, key: undefined, status: 404 };
    const line = formatAccessLine(processBindings(), TIME, noKey);
    expect(line).to.equal(pinoLine(noKey));
    expect(JSON.parse(line)).to.not.have.property('key');
  });

  it('any client text in the path or request id stays inside its value: one line, the same fields', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'binary' }),
        fc.string({ unit: 'binary' }),
        fc.constantFrom('GET', 'POST', 'PROPFIND'),
        fc.integer({ min: 100, max: 599 }),
        fc.double({ min: 0, max: 1e6, noNaN: true }),
        (path, requestId, method, status, ms) => {
          const given = { requestId, method, path, status, ms, key: undefined };
          const line = formatAccessLine(processBindings(), TIME, given);
          expect(line.indexOf('\n')).to.equal(line.length - 1);
          expect(JSON.parse(line)).to.deep.equal(JSON.parse(pinoLine(given)));
        },
      ),
      { numRuns: 500 },
    );
  });
});
