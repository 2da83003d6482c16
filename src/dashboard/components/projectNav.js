/** The sections of one project: its data per environment, its keys, its settings. */
import { html } from '../lib/html.js';
import { href } from '../lib/router.js';

const SECTIONS = [
  { id: 'test', label: 'Test data', to: (p) => href('p', p, 'test') },
  { id: 'live', label: 'Live data', to: (p) => href('p', p, 'live') },
  { id: 'keys', label: 'API keys', to: (p) => href('p', p, 'keys') },
  { id: 'settings', label: 'Settings', to: (p) => href('p', p, 'settings') },
];

export function ProjectNav({ project, current }) {
  return html`<nav class="tabs" aria-label=${`Project ${project}`}>
    <a href=${href()} class="crumb">Projects</a>
    <span class="crumb-sep" aria-hidden="true">/</span>
    <strong class="crumb">${project}</strong>
    <ul>
      ${SECTIONS.map(
        (section) =>
          html`<li><a href=${section.to(project)} aria-current=${section.id === current ? 'page' : undefined}>${section.label}</a></li>`,
      )}
    </ul>
  </nav>`;
}
