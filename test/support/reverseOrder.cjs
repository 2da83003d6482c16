// `npm run test:any-order`: every suite runs its tests in reverse order, so a test that needs
// state an earlier test left behind fails (each test must set up what it reads).
const Mocha = require('mocha');

const runSuite = Mocha.Runner.prototype.runSuite;
Mocha.Runner.prototype.runSuite = function (suite, fn) {
  suite.tests.reverse();
  return runSuite.call(this, suite, fn);
};
