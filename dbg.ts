import { jsonParseKeepsKeys } from './src/runtimeCheck.js';
console.log(process.version, jsonParseKeepsKeys(), jsonParseKeepsKeys());
const a = JSON.parse('{"a\\\\":1}'); const b = JSON.parse('{"a\\n":1}');
console.log(Object.keys(a), Object.keys(b));
