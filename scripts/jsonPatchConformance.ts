/**
 * `npm run conformance`: the public JSON Patch test suite (json-patch-tests) run through Folio's
 * PATCH endpoint over real HTTP. Cases whose document is not a JSON object cannot be a Folio
 * document, nor can documents whose field names Folio rejects; those are counted as skipped.
 *
 * Usage: npm run conformance [-- path/to/json-patch-tests]
 * (defaults to the dev dependency json-patch-test-suite, the suite's npm release; a path runs
 * another copy, such as a newer checkout of the suite's repository)
 */

import { existsSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, resolve } from 'node:path';
import { isDeepStrictEqual } from 'node:util';
import { userFields } from '../src/services/documentRules.js';
import { startTestServer } from '../test/support/server.js';

interface PatchCase {
  comment?: string;
  doc: unknown;
  patch: unknown;
  expected?: unknown;
  error?: string;
  disabled?: boolean;
}

const dir = process.argv[2]
  ? resolve(process.argv[2])
  : dirname(createRequire(import.meta.url).resolve('json-patch-test-suite/package.json'));
if (!existsSync(join(dir, 'tests.json'))) {
  process.stderr.write(`json-patch-tests not found in ${dir}; pass its path as the first argument.\n`);
  process.exit(2);
}

const cases: Array<PatchCase & { file: string; index: number }> = ['tests.json', 'spec_tests.json'].flatMap(
  (file) =>
    (JSON.parse(readFileSync(join(dir, file), 'utf8')) as PatchCase[]).map((c, index) => ({
      ...c,
      file,
      index,
    })),
);

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
/** The user fields of a Folio document. */
const userView = (doc: Record<string, unknown>) => {
  const { _id, $createdAt, $updatedAt, $version, ...rest } = doc;
  return rest;
};

/** Whether Folio's field rules accept the object as a document. */
const storable = (doc: Record<string, unknown>) => {
  try {
    userFields(doc);
    return true;
  } catch {
    return false;
  }
};

const server = await startTestServer();
const tenant = await server.tenant({ plan: 'team' });
const counts = { passed: 0, failed: 0, skipped: 0 };
const skipReasons = new Map<string, number>();
const skip = (reason: string) => {
  counts.skipped += 1;
  skipReasons.set(reason, (skipReasons.get(reason) ?? 0) + 1);
};
const failures: string[] = [];

try {
  for (const c of cases) {
    const name = `${c.file}#${c.index} ${c.comment ?? ''}`.trim();
    if (c.disabled) {
      skip('disabled in the suite');
      continue;
    }
    if (!isObject(c.doc)) {
      skip('document is not a JSON object');
      continue;
    }
    if (c.expected !== undefined && !isObject(c.expected)) {
      skip('expected result is not a JSON object');
      continue;
    }
    if (isObject(c.expected) && !storable(c.expected)) {
      skip('expected result has a field name Folio rejects (empty, $-prefixed or dotted)');
      continue;
    }
    const id = `case-${c.file.replace('.json', '')}-${c.index}`;
    const put = await server.request('PUT', `/${tenant.project}/patchsuite/${id}`, {
      key: tenant.key,
      body: c.doc,
    });
    if (put.status !== 201) {
      skip(`document rejected by Folio's field rules (${put.body?.error?.code ?? put.status})`);
      continue;
    }
    const res = await server.request('PATCH', `/${tenant.project}/patchsuite/${id}`, {
      key: tenant.key,
      body: c.patch,
      contentType: 'application/json-patch+json',
    });
    const after = (await server.request('GET', `/${tenant.project}/patchsuite/${id}`, { key: tenant.key }))
      .body;
    let ok: boolean;
    if (c.error !== undefined) {
      // Must be refused with a 4xx and change nothing.
      ok = res.status >= 400 && res.status < 500 && after.$version === 1;
    } else if (c.expected !== undefined) {
      ok = res.status === 200 && isDeepStrictEqual(userView(res.body), c.expected);
    } else {
      ok = res.status === 200;
    }
    if (ok) counts.passed += 1;
    else {
      counts.failed += 1;
      failures.push(`${name}: status ${res.status} ${res.text.slice(0, 200)}`);
    }
  }
} finally {
  await server.close();
}

for (const f of failures) process.stdout.write(`FAIL ${f}\n`);
process.stdout.write(`\nJSON Patch conformance (${cases.length} cases from ${dir})\n`);
for (const [reason, n] of skipReasons) process.stdout.write(`  skipped ${n}: ${reason}\n`);
process.stdout.write(`${counts.passed} passed, ${counts.failed} failed, ${counts.skipped} skipped\n`);
process.exitCode = counts.failed > 0 ? 1 : 0;
