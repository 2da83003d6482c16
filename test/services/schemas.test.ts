/**
 * Collection schemas below HTTP: compiled once per revision in a bounded cache, the schema rules
 * under generated hostile input, and RE2 patterns agreeing with JavaScript's engine where both
 * can answer.
 */
import { expect } from 'chai';
import fc from 'fast-check';
import { pino } from 'pino';
import { AppError } from '../../src/errors.js';
import { newId } from '../../src/ids.js';
import type { KeyContext } from '../../src/services/context.js';
import { SchemaService } from '../../src/services/schemas/index.js';
import { checkSchema } from '../../src/services/schemas/schemaRules.js';
import {
  CompiledSchemas,
  compiledCodeLength,
  compileSchema,
  MAX_COMPILED_SCHEMAS,
} from '../../src/services/schemas/validators.js';
import { tempEmbeddedStore } from '../support/stores.js';

describe('collection schemas (service)', () => {
  const store = tempEmbeddedStore('suite');

  it('compiles a schema once per revision, however many writes it checks', async () => {
    let now = 0;
    const service = new SchemaService(store(), pino({ level: 'silent' }), () => now);
    const ctx = {
      plan: 'free',
      limits: { schemaChangesPerMinute: 10 },
      scope: { projectId: newId('prj'), env: 'test' },
    } as KeyContext;
    await service.set(ctx, 'c', { schema: { properties: { n: { type: 'number' } } }, mode: 'enforce' });
    expect(service.compiled.compilations).to.equal(1);
    for (let i = 0; i < 5; i++) {
      now += 2000; // past the record's memory: read from the store again, still not recompiled
      await service.check(ctx, 'c', { n: i });
    }
    expect(service.compiled.compilations).to.equal(1);
    const refused = await service.check(ctx, 'c', { n: 'x' }).catch((e: AppError) => e.code);
    expect(refused).to.equal('schema_violation');
    await service.set(ctx, 'c', { schema: { properties: { n: { type: 'string' } } }, mode: 'enforce' });
    await service.check(ctx, 'c', { n: 'x' });
    expect(service.compiled.compilations).to.equal(2);
  });

  it('keeps a bounded number of compiled schemas, least recently used out first', () => {
    const capacity = 3;
    const compiled = new CompiledSchemas(capacity);
    const text = '{"type":"object"}';
    for (let i = 0; i < capacity; i++) compiled.get(`r${i}`, text);
    compiled.get('r0', text);
    expect(compiled.compilations).to.equal(capacity);
    // One more: r1, the least recently used, goes; r0 (used since) and r2 stay.
    compiled.get(`r${capacity}`, text);
    expect(compiled.compilations).to.equal(capacity + 1);
    compiled.get('r0', text);
    compiled.get('r2', text);
    expect(compiled.compilations).to.equal(capacity + 1);
    compiled.get('r1', text);
    expect(compiled.compilations).to.equal(capacity + 2);
    expect(MAX_COMPILED_SCHEMAS).to.equal(500);
  });

  it('compiles a reference once, not at every use (no inlining blow-up)', () => {
    const big: Record<string, unknown> = {};
    for (let i = 0; i < 60; i++) big[`p${i}`] = { type: 'string', minLength: 1 };
    const uses: Record<string, unknown> = {};
    for (let i = 0; i < 60; i++) uses[`r${i}`] = { $ref: '#/$defs/big' };
    const text = JSON.stringify({
      $defs: { big: { type: 'object', properties: big } },
      type: 'object',
      properties: uses,
    });
    // Inlined, the definition's code is copied at each of the 60 references (about 60 times
    // this); each reference is a call instead. (200 by 200 took 20 s and 26 MB of code.)
    expect(compiledCodeLength(text)).to.be.below(20 * text.length);
    const validate = compileSchema(text);
    expect(validate({ r0: { p0: 'x' }, r59: { p1: '' } })).to.deep.equal([
      { instancePath: '/r59/p1', keyword: 'minLength', message: 'must NOT have fewer than 1 characters' },
    ]);
  });

  it('any generated schema is accepted, or refused with a client error; never a crash', () => {
    fc.assert(
      fc.property(fc.jsonValue({ maxDepth: 6 }), (value) => {
        try {
          const text = checkSchema(value);
          compileSchema(text)({ a: 1 });
        } catch (error) {
          expect(error).to.be.instanceOf(AppError);
          expect((error as AppError).status).to.be.oneOf([400, 413]);
        }
      }),
      { numRuns: 300 },
    );
  });

  it('accepts $schema 2020-12 and refuses what the meta-schema refuses', () => {
    const validate = compileSchema(
      JSON.stringify({ $schema: 'https://json-schema.org/draft/2020-12/schema', type: 'string' }),
    );
    expect(validate('x' as never)).to.deep.equal([]);
    expect(validate(1 as never)).to.have.length(1);
    for (const bad of [{ type: 'nonsense' }, { minLength: -1 }, { required: 'a' }]) {
      expect(() => compileSchema(JSON.stringify(bad)), JSON.stringify(bad)).to.throw(/not valid JSON Schema/);
    }
  });

  it('patterns run on RE2 answer like JavaScript’s engine', () => {
    const patterns = ['^(a+)+$', '^[a-c]{2,4}x?$', 'b', '^(ab|a)*c$'];
    for (const pattern of patterns) {
      const validate = compileSchema(JSON.stringify({ type: 'string', pattern }));
      const js = new RegExp(pattern, 'u');
      fc.assert(
        fc.property(fc.stringMatching(/^[abcx]{0,12}$/), (s) => {
          expect(validate(s as never).length === 0, `${pattern} on ${s}`).to.equal(js.test(s));
        }),
        { numRuns: 200 },
      );
    }
  });
});
