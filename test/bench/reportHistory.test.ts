/**
 * docs/performance.md is written by `npm run bench`, its last section copied from
 * bench/reportHistory.md, where each report's findings are written by hand: a bullet added to
 * one and not the other, or a report regenerated from an older history, fails here.
 */
import { readFile } from 'node:fs/promises';
import { expect } from 'chai';

const HEADING = '\n## Reading these numbers\n\n';

describe('bench report: its history section', () => {
  it('docs/performance.md ends with bench/reportHistory.md, word for word', async () => {
    const report = await readFile(new URL('../../docs/performance.md', import.meta.url), 'utf8');
    const history = await readFile(new URL('../../bench/reportHistory.md', import.meta.url), 'utf8');
    const at = report.lastIndexOf(HEADING);
    expect(at, 'the section heading').to.be.above(0);
    expect(report.slice(at + HEADING.length)).to.equal(`${history.trimEnd()}\n`);
  });
});
