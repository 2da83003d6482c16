/**
 * A project's pages only for a project the account has: an unknown name (a mistyped address, a
 * project of another account) gets a page that says so and offers no form to fill in.
 */

import { html } from '../lib/html.js';
import { useProject } from '../lib/projects.js';
import { href } from '../lib/router.js';
import { ErrorBox, Loading } from './feedback.js';
import { Page } from './page.js';

export function ProjectGate({ project, children }) {
  const loaded = useProject(project);
  if (loaded.data) return children;
  if (loaded.loading) return html`<${Loading} what=${`project ${project}`} />`;
  const unknown = loaded.error?.status === 404;
  return html`<${Page} title=${unknown ? 'Project not found' : 'Project unavailable'}>
    <${ErrorBox} error=${loaded.error} />
    <p><a href=${href()}>Go to your projects</a>${unknown ? ' to open one or create it.' : '.'}</p>
  <//>`;
}
