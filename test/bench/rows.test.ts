/**
 * The bench's shared rows: the raw better-sqlite3 baseline's CSV import (papaparse, then
 * documentOfCsvRecord) stores the very documents the CSV was written from, so its figure is for
 * the same work as Folio's CSV import of the same text.
 */
import { expect } from 'chai';
import Papa from 'papaparse';
import { documentOfCsvRecord, transferCsv, transferDoc } from '../../bench/workloads/rows.js';

describe('bench rows', () => {
  it('the raw baseline reads transferCsv back into transferDoc, row for row', () => {
    const parsed = Papa.parse<Record<string, unknown>>(transferCsv(0, 300), {
      header: true,
      dynamicTyping: true,
      skipEmptyLines: true,
    });
    expect(parsed.errors).to.deep.equal([]);
    expect(parsed.data.map(documentOfCsvRecord)).to.deep.equal(
      Array.from({ length: 300 }, (_, i) => transferDoc(i)),
    );
  });
});
