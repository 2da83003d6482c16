/**
 * Root hooks (loaded by .mocharc.json): a response that breaks the OpenAPI document fails the
 * test during which it was sent (see contract.ts), naming the request, the status and what is
 * wrong. `OPENAPI_CHECK_REPORT=1` prints the violations instead of failing, to survey them all.
 */
import { violations } from './contract.js';

function report(): void {
  if (violations.length === 0) return;
  const found = violations.splice(0);
  const text = `${found.length} response(s) break the OpenAPI document:\n  ${found.join('\n  ')}`;
  if (process.env.OPENAPI_CHECK_REPORT === '1') {
    process.stderr.write(`CONTRACT ${text}\n`);
    return;
  }
  throw new Error(text);
}

export const mochaHooks = {
  afterEach: report,
  afterAll: report,
};
