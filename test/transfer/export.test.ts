import { expect } from 'chai';
import Papa from 'papaparse';
import { forEachStore } from '../support/stores.js';
import { CSV, JSON_TYPE, NDJSON, transferClient, userPart } from './client.js';

const MAX_EXPORT = 12;

/** Documents that exercise every representation question a round trip can meet. */
const TRICKY = [
  { _id: 'r1', name: 'Ada', age: 36, zip: '08123', code: '42', flag: 'true', empty: '', nil: null },
  { _id: 'r2', address: { city: 'Zürich', geo: { lat: 47.37, lng: 8.54 } }, tags: ['a', 'b,c', '"q"'] },
  { _id: 'r3', nested: { deep: { deeper: { x: [1, { y: 'z' }] } } }, obj: {}, unicode: '日本語 ✓ emoji 🎉' },
  {
    _id: 'r4',
    big: 2 ** 60,
    small: 1e-7,
    neg: -0.5,
    quote: 'she said "hi", then\r\nleft',
    text: '[not json',
  },
  { _id: 'r5', looksJson: '[1,2]', looksString: '"x"', looksObj: '{}', bool: false, n: 0 },
];

forEachStore(
  'export',
  (ctx) => {
    const api = () => transferClient(ctx);
    const exportRaw = (collection: string, accept?: string, query = '') =>
      fetch(`${ctx.server.url}/${ctx.tenant.project}/${collection}/_export${query}`, {
        headers: { Authorization: `Bearer ${ctx.tenant.key}`, ...(accept ? { Accept: accept } : {}) },
      });

    before(async () => {
      const seeded = await api().importRaw('tricky', JSON.stringify(TRICKY), JSON_TYPE);
      expect(seeded.body.imported).to.equal(TRICKY.length);
      const people = Array.from({ length: 10 }, (_, i) => ({
        _id: `p${i}`,
        i,
        team: i % 2 ? 'odd' : 'even',
      }));
      expect((await api().importRaw('people', JSON.stringify(people), JSON_TYPE)).body.imported).to.equal(10);
    });

    it('JSON by default: an array of whole documents, streamed, with a file name', async () => {
      const res = await exportRaw('people');
      expect(res.status).to.equal(200);
      expect(res.headers.get('content-type')).to.equal('application/json; charset=utf-8');
      expect(res.headers.get('content-disposition')).to.match(
        /^attachment; filename="people-\d{8}T\d{6}Z\.json"$/,
      );
      // Streamed: sent in chunks, without a length known up front.
      expect(res.headers.get('content-length')).to.equal(null);
      expect(res.headers.get('transfer-encoding')).to.equal('chunked');
      const docs = (await res.json()) as Array<Record<string, unknown>>;
      expect(docs.map((d) => d._id)).to.deep.equal([
        'p0',
        'p1',
        'p2',
        'p3',
        'p4',
        'p5',
        'p6',
        'p7',
        'p8',
        'p9',
      ]);
      expect(docs[0]).to.have.keys('_id', 'i', 'team', '$createdAt', '$updatedAt', '$version');
    });

    it('NDJSON and CSV by Accept; an Accept it cannot meet is 406', async () => {
      const nd = await exportRaw('people', NDJSON);
      expect(nd.headers.get('content-type')).to.equal('application/x-ndjson; charset=utf-8');
      expect(nd.headers.get('content-disposition')).to.match(/\.ndjson"$/);
      expect((await nd.text()).trim().split('\n')).to.have.length(10);
      const csv = await exportRaw('people', CSV);
      expect(csv.headers.get('content-type')).to.equal('text/csv; charset=utf-8');
      const lines = (await csv.text()).trim().split('\r\n');
      expect(lines[0]).to.equal('_id,i,team,$createdAt,$updatedAt,$version');
      expect(lines).to.have.length(11);
      const none = await exportRaw('people', 'image/png');
      expect(none.status).to.equal(406);
    });

    it("the listing's filters and sort select and order the subset", async () => {
      const res = await exportRaw('people', NDJSON, '?filter[team]=odd&filter[i][gte]=3&sort=-i');
      const ids = (await res.text())
        .trim()
        .split('\n')
        .map((line) => JSON.parse(line)._id);
      expect(ids).to.deep.equal(['p9', 'p7', 'p5', 'p3']);
      const bad = await exportRaw('people', NDJSON, '?filter[i][near]=1');
      expect(bad.status).to.equal(400);
      const unknown = await exportRaw('people', NDJSON, '?limit=5');
      expect(unknown.status).to.equal(400);
      expect(
        ((await unknown.json()) as { error: { details: { param: string } } }).error.details.param,
      ).to.equal('limit');
    });

    it(`plan maximum: ${MAX_EXPORT} matching documents export, ${MAX_EXPORT + 1} or more are 403, counted only to ${MAX_EXPORT + 1}`, async () => {
      // Many more than the maximum: the count stops at one past it (a bounded count on MongoDB).
      const docs = Array.from({ length: MAX_EXPORT + 5 }, (_, i) => ({ i }));
      await api().importRaw('capped', JSON.stringify(docs), JSON_TYPE);
      const over = await exportRaw('capped');
      expect(over.status).to.equal(403);
      const body = (await over.json()) as { error: { code: string; message: string; details: unknown } };
      expect(body.error.code).to.equal('plan_limit_exceeded');
      expect(body.error.details).to.deep.equal({
        limit: 'exportDocuments',
        max: MAX_EXPORT,
        plan: 'free',
        matched: 13,
      });
      expect(body.error.message).to.include(`More than ${MAX_EXPORT} documents match`);
      const at = await exportRaw('capped', JSON_TYPE, `?filter[i][lt]=${MAX_EXPORT}`);
      expect(at.status).to.equal(200);
      expect(((await at.json()) as unknown[]).length).to.equal(MAX_EXPORT);
    });

    it('a read-only key may export; an empty collection exports an empty file', async () => {
      const ro = await ctx.tenant.newKey({ scope: 'read-only', name: 'ro-export' });
      const res = await fetch(`${ctx.server.url}/${ctx.tenant.project}/nothing/_export`, {
        headers: { Authorization: `Bearer ${ro.rawKey}`, Accept: CSV },
      });
      expect(res.status).to.equal(200);
      expect(await res.text()).to.equal('_id,$createdAt,$updatedAt,$version\r\n');
      expect(await (await exportRaw('nothing')).json()).to.deep.equal([]);
    });

    it('CSV takes 5,000 distinct fields; one more is 406 pointing to JSON and NDJSON', async () => {
      const wide = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`f${i}`, i]));
      await api().importJson('wide', [
        { _id: 'w1', ...wide(4999) },
        { _id: 'w2', f4999: 1 },
      ]);
      expect((await exportRaw('wide', CSV)).status).to.equal(200);
      await api().importJson('wide', [{ _id: 'w3', f5000: 1 }]);
      const over = await exportRaw('wide', CSV);
      expect(over.status).to.equal(406);
      expect(((await over.json()) as { error: { details: unknown } }).error.details).to.deep.equal({
        accepted: [JSON_TYPE, NDJSON],
      });
    });

    it('CSV: union of columns, nested objects as dot columns, arrays as JSON, strings that look like numbers quoted', async () => {
      const text = await (await exportRaw('tricky', CSV)).text();
      const header = text.split('\r\n')[0]!.split(',');
      expect(header.slice(0, 4)).to.deep.equal(['_id', 'name', 'age', 'zip']);
      expect(header).to.include.members([
        'address.city',
        'address.geo.lat',
        'nested.deep.deeper.x',
        'obj',
        'tags',
      ]);
      expect(header.slice(-3)).to.deep.equal(['$createdAt', '$updatedAt', '$version']);
      expect(text).to.include('r1,Ada,36,08123,"""42""","""true""","""""",null');
      expect(text).to.include('"[""a"",""b,c"",""\\""q\\""""]"');
    });

    describe('CSV formula escape (OWASP)', () => {
      // One document per leading character: the six a spreadsheet runs, then neighbours it does not.
      const RUN = ['=HYPERLINK("http://x","y")', '+1+cmd', '-2+3', '@SUM(A1)', '\tx', '\rx'];
      const INERT = ['*x', "'=x", ' =x', '', '-5'];
      before(async () => {
        const docs = [...RUN, ...INERT].map((text, i) => ({ _id: `f${String(i).padStart(2, '0')}`, text }));
        // Within the plan's 12 exported documents.
        docs.push({
          _id: 'n1',
          text: 'typed',
          n: -5,
          neg: -0.5,
          '=cmd': 'x',
          '-nested': { '+k': '@v' },
        } as never);
        expect((await api().importJson('formulas', docs)).body.imported).to.equal(docs.length);
      });
      const rows = async (query = '') => {
        const res = await exportRaw('formulas', CSV, `${query}${query ? '&' : '?'}sort=_id`);
        expect(res.status).to.equal(200);
        const parsed = Papa.parse<string[]>(await res.text(), { newline: '\r\n' });
        return parsed.data.filter((row) => row.length > 1);
      };

      it('by default every text cell starting with = + - @ tab or CR gets a leading quote, and only those', async () => {
        const [header, ...body] = await rows();
        expect(header!.slice(0, 5)).to.deep.equal(['_id', 'text', 'n', 'neg', "'=cmd"]);
        expect(header).to.include.members(["'-nested.+k"]);
        const text = new Map(body.map((row) => [row[0], row[1]]));
        RUN.forEach((cell, i) => {
          expect(text.get(`f${String(i).padStart(2, '0')}`), JSON.stringify(cell)).to.equal(`'${cell}`);
        });
        // Inert starts stay as they are; strings the import would read as something else are JSON
        // literals (`"-5"`, `""`), which start with a quote, so they are inert too.
        const inert = INERT.map((_, i) => text.get(`f${String(i + RUN.length).padStart(2, '0')}`));
        expect(inert).to.deep.equal(['*x', "'=x", ' =x', '""', '"-5"']);
        // Numbers are typed data, never text a spreadsheet runs: -5 is written -5.
        const typed = body.find((row) => row[0] === 'n1')!;
        expect(typed.slice(1, 4)).to.deep.equal(['typed', '-5', '-0.5']);
        expect(typed).to.include.members(["'@v", 'x']);
      });

      it('formulaEscape=false writes cells exactly, and importing that file gives the same documents', async () => {
        const [header, ...body] = await rows('?formulaEscape=false');
        expect(header).to.include.members(['=cmd', '-nested.+k']);
        expect(body.map((row) => row[1])).to.include.members(RUN);
        const exported = await (await exportRaw('formulas', CSV, '?formulaEscape=false')).text();
        expect((await api().importRaw('formulasCopy', exported, CSV)).body.errors).to.deep.equal([]);
        expect((await api().all('formulasCopy')).map(userPart)).to.deep.equal(
          (await api().all('formulas')).map(userPart),
        );
      });

      it('importing an escaped file keeps the quote: the import strips nothing (documented)', async () => {
        const exported = await (await exportRaw('formulas', CSV, '?formulaEscape=true')).text();
        const res = await api().importRaw('formulasEscaped', exported, CSV);
        expect(res.body.errors).to.deep.equal([]);
        const docs = new Map((await api().all('formulasEscaped')).map((d) => [d._id, d]));
        expect(docs.get('f00')!.text).to.equal(`'${RUN[0]}`);
        expect(docs.get('f07')!.text).to.equal("'=x");
        expect(docs.get('f06')!.text).to.equal('*x');
        expect(docs.get('n1')!.n).to.equal(-5);
        expect(docs.get('n1')!["'=cmd"]).to.equal('x');
        expect(docs.get('n1')!["'-nested"]).to.deep.equal({ '+k': "'@v" });
      });

      it('formulaEscape takes true or false only, once', async () => {
        for (const query of [
          '?formulaEscape=off',
          '?formulaEscape=1',
          '?formulaEscape=true&formulaEscape=false',
        ]) {
          const res = await exportRaw('formulas', CSV, query);
          expect(res.status, query).to.equal(400);
          const body = (await res.json()) as { error: { code: string; details: { param: string } } };
          expect(body.error.details.param).to.equal('formulaEscape');
        }
        // JSON and NDJSON take it too (a client may pass it whatever the format) and are unchanged.
        const json = await exportRaw('formulas', JSON_TYPE, '?formulaEscape=true');
        expect(((await json.json()) as Array<{ text: string }>).map((d) => d.text)).to.include(RUN[0]);
      });
    });

    for (const [format, type] of [
      ['JSON', JSON_TYPE],
      ['NDJSON', NDJSON],
      ['CSV', CSV],
    ] as const) {
      it(`round trip through ${format}: export, import into an empty collection, same ids and user fields`, async () => {
        const exported = await (await exportRaw('tricky', type)).text();
        const target = `copy${format}`;
        const res = await api().importRaw(target, exported, type);
        expect(res.status).to.equal(200);
        expect(res.body).to.deep.equal({
          imported: TRICKY.length,
          skipped: 0,
          errors: [],
          total: TRICKY.length,
        });
        const copied = (await api().all(target)).map(userPart);
        expect(copied).to.deep.equal(TRICKY);
      });
    }
  },
  { config: { plans: { free: { maxExportDocuments: MAX_EXPORT } } } },
);
