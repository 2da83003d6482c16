/**
 * docs/configuration.md is generated from src/config/schema.ts and config/default.json; a
 * setting added, removed, renamed, re-described or given another default without
 * `npm run docs:config` fails here.
 */
import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { CONFIG_REFERENCE_FILE, renderConfigReference } from '../../scripts/configReference.js';
import { loadConfig } from '../../src/config/load.js';

describe('docs/configuration.md', () => {
  it('is what npm run docs:config renders from the schema and the defaults', () => {
    expect(readFileSync(CONFIG_REFERENCE_FILE, 'utf8'), 'run npm run docs:config').to.equal(
      renderConfigReference(),
    );
  });

  it('lists every setting, each with a description, under the variable that sets it', () => {
    const page = renderConfigReference();
    const rows = page.split('\n').filter((line) => /^\| `(FOLIO_|PORT|HOST|MONGODB_URI)/.test(line));
    expect(rows.filter((row) => row.trimEnd().endsWith('|  |'))).to.deep.equal([]);
    // A variable the page names really sets its key.
    expect(loadConfig({ FOLIO_PLANS_PRO_STORED_VERSIONS: '25' }).plans.pro.storedVersions).to.equal(25);
    expect(page).to.include('`FOLIO_PLANS_<PLAN>_STORED_VERSIONS`');
    expect(loadConfig({ FOLIO_EMBEDDED_PAGE_CACHE_MB: '8' }).embedded.pageCacheMb).to.equal(8);
    expect(page).to.include('| `FOLIO_EMBEDDED_PAGE_CACHE_MB` | integer ≥ 1 | `64` |');
  });
});
