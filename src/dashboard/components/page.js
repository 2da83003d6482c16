/** A page: its title in the tab and as the h1, which takes focus when the page changes. */
import { useEffect, useRef } from 'preact/hooks';
import { html } from '../lib/html.js';

export function Page({ title, children, actions }) {
  const heading = useRef(null);
  useEffect(() => {
    document.title = `${title} · Folio`;
    // Moving focus to the new heading tells screen readers the page changed.
    heading.current?.focus();
  }, [title]);
  return html`<section class="page" aria-labelledby="page-title">
    <div class="page-head">
      <h1 id="page-title" tabindex="-1" ref=${heading}>${title}</h1>
      ${actions ?? null}
    </div>
    ${children}
  </section>`;
}
