/**
 * A client body as a document's fields (services/documentRules.ts `userFields`): every allowed
 * name kept as an own data property, the first refused name reported by its path, and nesting
 * bounded.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { AppError } from '../../src/errors.js';
import { fieldNameProblem } from '../../src/fieldNames.js';
import { MAX_DEPTH, userFields } from '../../src/services/documentRules.js';

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };

/** The 400 `userFields` throws for `body`, or null when it accepts it. */
function refusal(body: unknown): AppError | null {
  try {
    userFields(body);
    return null;
  } catch (error) {
    expect(error).to.be.instanceOf(AppError);
    expect((error as AppError).status).to.equal(400);
    return error as AppError;
  }
}

/** Every refused name's path, as an error names it (`a.b[2].c`), found by a plain recursive walk. */
function refusedPaths(value: Json, path = '', found: string[] = []): string[] {
  if (Array.isArray(value)) {
    for (const [i, child] of value.entries()) refusedPaths(child, `${path}[${i}]`, found);
  } else if (value !== null && typeof value === 'object') {
    for (const key of Object.keys(value)) {
      const where = path ? `${path}.${key}` : key;
      if (fieldNameProblem(key)) found.push(where);
      refusedPaths(value[key] as Json, where, found);
    }
  }
  return found;
}

const names = fc.oneof(
  {
    weight: 6,
    arbitrary: fc.constantFrom('a', 'b', 'name', 'constructor', 'toString', 'hasOwnProperty', 'valueOf'),
  },
  { weight: 1, arbitrary: fc.constantFrom('', '$set', 'a.b', '__proto__', 'x\u0000', 'tab\u0009') },
);
const { json } = fc.letrec<{ json: Json }>((tie) => ({
  json: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.oneof(fc.integer(), fc.string({ maxLength: 4 }), fc.boolean(), fc.constant(null)),
    fc.array(tie('json'), { maxLength: 3 }),
    fc.array(fc.tuple(names, tie('json')), { maxLength: 4 }).map((entries) => {
      // Built as JSON text and parsed, as a request body is: `__proto__` is then an own key.
      const text = `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(',')}}`;
      return JSON.parse(text) as Json;
    }),
  ),
}));
const body = fc.array(fc.tuple(names, json), { maxLength: 5 }).map(
  (entries) =>
    JSON.parse(`{${entries.map(([k, v]) => `${JSON.stringify(k)}:${JSON.stringify(v)}`).join(',')}}`) as {
      [key: string]: Json;
    },
);

describe('a body as a document’s fields', () => {
  it('accepts a body without refused names as the same fields, each an own data property', () => {
    fc.assert(
      fc.property(body, (input) => {
        fc.pre(refusedPaths(input).length === 0);
        const { fields } = userFields(input);
        expect(fields).to.deep.equal(input);
        for (const key of Object.keys(input)) {
          expect(Object.getOwnPropertyDescriptor(fields, key)).to.include({
            enumerable: true,
            writable: true,
          });
        }
        expect(Object.getPrototypeOf(fields)).to.equal(Object.prototype);
      }),
      { numRuns: 500 },
    );
  });

  it('refuses a body with a refused name at any depth, naming the path of one of them', () => {
    fc.assert(
      fc.property(body, (input) => {
        const refused = refusedPaths(input);
        fc.pre(refused.length > 0);
        const error = refusal(input);
        if (!error) expect.fail(`accepted ${JSON.stringify(input)}`);
        expect(refused).to.include((error.details as { field: string }).field);
        expect(error.message).to.include('Field "');
      }),
      { numRuns: 500 },
    );
  });

  it('names the path through objects and arrays as a.b[1].c and a[0][1].d', () => {
    expect(refusal({ a: { b: [{}, { $x: 1 }] } })?.details).to.deep.equal({ field: 'a.b[1].$x' });
    expect(refusal({ a: [[1, { 'd.e': 1 }]] })?.details).to.deep.equal({ field: 'a[0][1].d.e' });
    expect(refusal(JSON.parse('{"ok":1,"__proto__":{"admin":true}}'))?.details).to.deep.equal({
      field: '__proto__',
    });
    expect(({} as { admin?: boolean }).admin).to.equal(undefined);
  });

  it(`allows ${MAX_DEPTH} levels of nesting and refuses ${MAX_DEPTH + 1}`, () => {
    const nested = (levels: number): Json => {
      let value: Json = 1;
      for (let i = 1; i < levels; i++) value = i % 2 ? [value] : { a: value };
      return { top: value };
    };
    expect(refusal(nested(MAX_DEPTH))).to.equal(null);
    expect(refusal(nested(MAX_DEPTH + 1))?.message).to.match(/nests deeper/);
  });
});
