/**
 * The start-up refusal of a Node.js whose JSON.parse can hand back another key than the text
 * says (src/runtimeCheck.ts): the affected versions at their edges, the probe against a parser
 * with the fault, and the way around it.
 */
import { expect } from 'chai';
import {
  jsonParseKeepsKeys,
  knownFaultyJsonParse,
  runtimeRefusal,
  UNSAFE_RUNTIME_VARIABLE,
} from '../src/runtimeCheck.js';

/**
 * JSON.parse with the fault: a key written with an escape is looked up among the keys parsed
 * before as if each escape were a backslash, and the earlier key comes back when one matches.
 */
function faultyParse(): (text: string) => unknown {
  const seen = new Map<string, string>();
  return (text: string) => {
    const raw = /^\{"((?:[^"\\]|\\.)*)":/.exec(text)?.[1] ?? '';
    const blind = raw.replace(/\\./g, '\\');
    const parsed = JSON.parse(text) as Record<string, unknown>;
    const [key] = Object.keys(parsed);
    const earlier = seen.get(blind);
    if (key === undefined) return parsed;
    if (earlier === undefined) {
      seen.set(blind, key);
      return parsed;
    }
    return { [earlier]: parsed[key] };
  };
}

describe('runtime check: JSON.parse keeps object keys', () => {
  it('knows the affected versions, at their edges', () => {
    const affected = [
      'v23.0.0',
      'v23.11.0',
      'v24.0.0',
      'v24.18.1',
      'v24.21.9',
      'v24.22.0',
      'v25.0.0',
      'v25.9.9',
    ];
    const fine = [
      'v20.19.0',
      'v22.22.0',
      'v22.99.0',
      'v24.22.1',
      'v24.23.0',
      'v25.10.0',
      'v26.0.0',
      'not a version',
    ];
    expect(affected.filter((v) => !knownFaultyJsonParse(v))).to.deep.equal([]);
    expect(fine.filter((v) => knownFaultyJsonParse(v))).to.deep.equal([]);
  });

  it('tells a parser with the fault from one without it', () => {
    expect(jsonParseKeepsKeys(faultyParse())).to.equal(false);
    // The runtime running these tests: CI runs them on versions without the fault.
    expect(jsonParseKeepsKeys((text) => JSON.parse(text))).to.equal(true);
  });

  it('refuses a known version or a failing probe, unless told to run anyway', () => {
    const good = () => true;
    const bad = () => false;
    expect(runtimeRefusal({}, 'v22.22.0', good)).to.equal(null);
    expect(runtimeRefusal({}, 'v24.22.1', good)).to.equal(null);
    const known = runtimeRefusal({}, 'v24.18.1', good);
    expect(known).to.include('Node.js v24.18.1').and.include(`${UNSAFE_RUNTIME_VARIABLE}=true`);
    expect(runtimeRefusal({}, 'v26.0.0', bad)).to.include('Node.js v26.0.0');
    expect(runtimeRefusal({ [UNSAFE_RUNTIME_VARIABLE]: 'true' }, 'v24.18.1', bad)).to.equal(null);
    // Only `true` runs anyway.
    expect(runtimeRefusal({ [UNSAFE_RUNTIME_VARIABLE]: '1' }, 'v24.18.1', bad)).to.not.equal(null);
  });
});
