import { compileFilter } from './src/store/embedded/compileQuery.js';
const c = compileFilter({ 'c.1.foo': { $in: [4] } });
console.log(c.sql);
