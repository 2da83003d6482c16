/** Where a collection page is (breadcrumbs) and the collection's sections. */
import { html } from '../lib/html.js';
import { href } from '../lib/router.js';

/** Sections of a collection page; features add theirs here. */
export const COLLECTION_SECTIONS = [
  { id: 'documents', label: 'Documents', path: [] },
  { id: 'live', label: 'Live changes', path: ['live'] },
  { id: 'webhooks', label: 'Webhooks', path: ['webhooks'] },
  { id: 'transfer', label: 'Import and export', path: ['transfer'] },
  { id: 'schema', label: 'Schema', path: ['schema'] },
  { id: 'trash', label: 'Trash', path: ['trash'] },
];

export function CollectionNav({ project, env, collection, current }) {
  return html`<nav class="tabs" aria-label=${`Collection ${collection}`}>
    <a href=${href()} class="crumb">Projects</a>
    <span class="crumb-sep" aria-hidden="true">/</span>
    <a href=${href('p', project, env)} class="crumb">${project} (${env})</a>
    <span class="crumb-sep" aria-hidden="true">/</span>
    <strong class="crumb">${collection}</strong>
    <ul>
      ${COLLECTION_SECTIONS.map(
        (section) => html`<li>
          <a href=${href('p', project, env, 'c', collection, ...section.path)}
            aria-current=${section.id === current ? 'page' : undefined}>${section.label}</a>
        </li>`,
      )}
    </ul>
  </nav>`;
}
