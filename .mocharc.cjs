// Mocha appends files named on the command line to a config's `spec`, so `npx mocha one.test.ts`
// would run the whole suite too: the default spec applies only when no test file is named.
const named = process.argv.slice(2).some((arg) => !arg.startsWith('-') && /\.test\.[cm]?[jt]s$/.test(arg));

module.exports = {
  'node-option': ['import=tsx'],
  // Every response a test server sends is checked against the OpenAPI document (test/support/contract.ts).
  require: ['test/support/contractHooks.ts'],
  // The browser suites run in a mocha process of their own (`npm test` runs both): once
  // playwright-core is loaded, @microsoft/fetch-event-source in the same process saw a cut
  // connection as a clean end and stopped (test/http/streamClients.test.ts), which it does not
  // in a process without it; the cause inside playwright-core was not found.
  ...(named ? {} : { spec: ['test/**/*.test.ts'], ignore: ['test/browser/**'] }),
  // Cases tagged @slow in their title (crash, soak, long streams, multi-library and generated
  // runs) are left out of `npm test` by `--grep @slow --invert`; `npm run test:slow` runs them.
  timeout: 20000,
  reporter: 'spec',
  exit: true,
};
