/** The two buttons under a list read page by page with `after` cursors, the first page's null. */
import { html } from '../lib/html.js';

/** `cursors`: the `after` of each page read so far; `meta`: the current page's. */
export function Pager({ cursors, onChange, meta, back, more }) {
  return html`<div class="pager">
    <button type="button" disabled=${cursors.length === 1} onClick=${() => onChange(cursors.slice(0, -1))}>${back}</button>
    <button type="button" disabled=${!meta.hasMore} onClick=${() => onChange([...cursors, meta.next])}>${more}</button>
  </div>`;
}
