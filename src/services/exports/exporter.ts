/**
 * `GET /{ns}/{collection}/_export`: the documents matching the listing's filters, in its sort
 * order, streamed from a store cursor (`DocumentRepository.scan`). The plan's maximum is checked
 * against the number that match before anything is sent: over it is a 403 saying how many
 * match, never a silently cut file.
 */
import { Readable } from 'node:stream';
import { z } from 'zod';
import { AppError, invalidQuery } from '../../errors.js';
import type { CellOptions } from '../../formats/csvCells.js';
import { forEachLeaf, MAX_CSV_COLUMNS } from '../../formats/csvDocument.js';
import { fileExtension, MEDIA_TYPES, type TransferFormat } from '../../formats/formats.js';
import { pagesOf, writeCsvPages, writeDocuments, writeJsonTexts } from '../../formats/writers.js';
import { isFilterParam, type RawQuery } from '../../query/filterParams.js';
import { checkPlanQueryLimits, parseListQuery } from '../../query/listQuery.js';
import { type FindQuery, type JsonObject, QueryRejectedError, type Store } from '../../store/port.js';
import type { KeyContext } from '../context.js';
import { withinView } from '../keyAccess.js';

export interface ExportResponse {
  body: Readable;
  contentType: string;
  filename: string;
  /** How many documents match: what the body holds. */
  count: number;
}

/**
 * `formulaEscape`: whether CSV cells a spreadsheet would run get a leading `'` (OWASP). On by
 * default, since an export is often opened by a person; `false` for a program that reads the
 * file back (Folio's own import included), which then gets the values exactly.
 */
export const FORMULA_ESCAPE_PARAM = 'formulaEscape';
export const formulaEscapeSchema = z.enum(['true', 'false']).optional().meta({
  description:
    "CSV only. `true` (default): a text cell starting with `=`, `+`, `-`, `@`, tab or carriage return gets a leading `'`, so a spreadsheet shows it instead of running it (OWASP CSV injection). `false`: cells exactly as stored, for programs (an import of the file gives the same documents).",
});

/** `?formulaEscape=`: on unless `false`; anything but true/false is 400. */
export function parseFormulaEscape(raw: RawQuery): CellOptions {
  const value = raw[FORMULA_ESCAPE_PARAM];
  if (value === undefined) return { formulaEscape: true };
  const parsed = formulaEscapeSchema.safeParse(value);
  if (!parsed.success) {
    throw invalidQuery(
      FORMULA_ESCAPE_PARAM,
      Array.isArray(value) ? 'given more than once' : `must be true or false, not '${value}'`,
    );
  }
  return { formulaEscape: parsed.data !== 'false' };
}

/** The metadata columns, after the user's, in a CSV export. */
const META_COLUMNS = ['$createdAt', '$updatedAt', '$version'];

/** The export would be cut by the race described in `export()`: the stream fails instead. */
export class ExportOverflow extends Error {
  constructor(max: number) {
    super(`more than ${max} documents matched while exporting`);
    this.name = 'ExportOverflow';
  }
}

export function exportTooLarge(matched: number, max: number, plan: string): AppError {
  return new AppError(
    403,
    'plan_limit_exceeded',
    `More than ${max} documents match; the ${plan} plan exports at most ${max} per request. ` +
      'Narrow the export with filters (for example on $createdAt) and export the parts.',
    { limit: 'exportDocuments', max, plan, matched },
  );
}

export class ExportService {
  constructor(private readonly store: Store) {}

  async export(
    ctx: KeyContext,
    collection: string,
    format: TransferFormat,
    raw: RawQuery,
  ): Promise<ExportResponse> {
    try {
      return await this.#export(ctx, collection, format, raw);
    } catch (error) {
      if (error instanceof QueryRejectedError) throw invalidQuery(error.param, error.message);
      throw error;
    }
  }

  async #export(
    ctx: KeyContext,
    collection: string,
    format: TransferFormat,
    raw: RawQuery,
  ): Promise<ExportResponse> {
    const { [FORMULA_ESCAPE_PARAM]: _escape, ...listing } = raw;
    for (const key of Object.keys(listing)) {
      if (key !== 'sort' && !isFilterParam(key)) {
        throw invalidQuery(
          key,
          `unknown parameter; an export takes filter[...], sort and ${FORMULA_ESCAPE_PARAM}`,
        );
      }
    }
    const cells = parseFormulaEscape(raw);
    const parsed = parseListQuery(listing);
    checkPlanQueryLimits(
      parsed,
      { maxFilters: ctx.limits.maxFilters, maxLimit: Number.POSITIVE_INFINITY, maxOffset: 0 },
      ctx.plan,
    );
    // A key's rule narrows the export to what it may see; the maximum counts only those.
    const filter = withinView(ctx.access.collection(collection), parsed.filter);
    const max = ctx.limits.maxExportDocuments;
    // Counting stops at one past the plan's maximum: a huge collection answers at once (403)
    // instead of counting every match until the query times out (503 on MongoDB).
    const count = await this.store.documents.count(ctx.scope, collection, filter, max + 1);
    if (count > max) throw exportTooLarge(count, max, ctx.plan);
    // A document written between the count and the scan could take the export past the plan.
    // Reading one more than allowed notices it, and the stream then fails (the client sees a
    // broken transfer) rather than ending as if complete.
    const query: FindQuery = { filter, sort: parsed.sort, skip: 0, limit: max + 1 };
    const documents = this.store.documents;
    let text: AsyncIterable<string>;
    let close: () => Promise<unknown>;
    if (format !== 'csv' && documents.scanJson) {
      // The store hands the documents' text: nothing parsed and serialised again.
      const scan = await startScan(
        documents.scanJson(ctx.scope, collection, query),
        max,
        (page) => page.length,
      );
      text = writeJsonTexts(format, scan.docs);
      close = scan.close;
    } else if (format === 'csv') {
      // Two reads: the header needs every document's columns before the first row.
      const columns = await this.#columns(this.#pages(ctx, collection, query));
      const scan = await startScan(this.#pages(ctx, collection, query), max, (page) => page.length);
      text = writeCsvPages(scan.docs, columns, cells);
      close = scan.close;
    } else {
      const scan = await startScan(documents.scan(ctx.scope, collection, query), max, () => 1);
      text = writeDocuments(format, scan.docs);
      close = scan.close;
    }
    const body = Readable.from(text, { objectMode: false });
    // However the response ends (done, client gone, error), the cursor is released.
    body.once('close', () => void close());
    return {
      body,
      contentType: `${MEDIA_TYPES[format]}; charset=utf-8`,
      filename: `${collection}-${new Date().toISOString().replace(/[-:]|\.\d+/g, '')}${fileExtension(format)}`,
      count,
    };
  }

  /**
   * The matching documents a page at a time: the store's texts parsed where it hands texts
   * (scanJson), else its documents gathered. A page is one step of the async iteration, where a
   * document each was a fifth of a CSV export's time.
   */
  async *#pages(ctx: KeyContext, collection: string, query: FindQuery): AsyncGenerator<JsonObject[]> {
    const documents = this.store.documents;
    if (!documents.scanJson) {
      yield* pagesOf(documents.scan(ctx.scope, collection, query));
      return;
    }
    for await (const texts of documents.scanJson(ctx.scope, collection, query)) {
      yield texts.map((text) => JSON.parse(text) as JsonObject);
    }
  }

  /** CSV's header: `_id`, the union of the documents' columns in first-seen order, metadata. */
  async #columns(pages: AsyncIterable<readonly JsonObject[]>): Promise<string[]> {
    const user = new Set<string>();
    const collect = (name: string) => {
      if (name === '_id' || user.has(name) || META_COLUMNS.includes(name)) return;
      user.add(name);
      if (user.size > MAX_CSV_COLUMNS) {
        throw new AppError(
          406,
          'not_acceptable',
          `These documents have more than ${MAX_CSV_COLUMNS} distinct fields, too many for CSV; export JSON or NDJSON.`,
          { accepted: [MEDIA_TYPES.json, MEDIA_TYPES.ndjson] },
        );
      }
    };
    for await (const page of pages) for (const doc of page) forEachLeaf(doc, collect);
    return ['_id', ...user, ...META_COLUMNS];
  }
}

/**
 * Take the first step of the scan now, so a query the store refuses is a 400 before any byte
 * is sent; then hand out that document and the rest, failing past `max`.
 */
async function startScan<T>(
  scan: AsyncIterable<T>,
  max: number,
  /** Documents in one item: 1 for a document, the page's length for a page of texts. */
  size: (item: T) => number,
): Promise<{ docs: AsyncIterable<T>; close: () => Promise<unknown> }> {
  const iterator = scan[Symbol.asyncIterator]();
  const first = await iterator.next();
  async function* all(): AsyncGenerator<T> {
    let n = 0;
    for (let step = first; !step.done; step = await iterator.next()) {
      n += size(step.value);
      if (n > max) throw new ExportOverflow(max);
      yield step.value;
    }
  }
  return { docs: all(), close: async () => iterator.return?.() };
}
