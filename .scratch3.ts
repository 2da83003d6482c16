import fc from 'fast-check';
import { parseListQuery } from './src/query/listQuery.js';
import { matchesFilter } from './src/query/documentMatcher.js';
const mod = await import('./test/query/differential.test.ts').catch((e) => { console.log('import fail', e.message); return null; });
