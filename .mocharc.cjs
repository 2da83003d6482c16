// Mocha appends files named on the command line to a config's `spec`, so `npx mocha one.test.ts`
// would run the whole suite too: the default spec applies only when no test file is named.
const named = process.argv.slice(2).some((arg) => !arg.startsWith('-') && /\.test\.[cm]?[jt]s$/.test(arg));

module.exports = {
  'node-option': ['import=tsx'],
  ...(named ? {} : { spec: ['test/**/*.test.ts'] }),
  timeout: 20000,
  reporter: 'spec',
  exit: true,
};
