import { Page } from '../components/page.js';
import { html } from '../lib/html.js';
import { href } from '../lib/router.js';

export function NotFoundPage() {
  return html`<${Page} title="Page not found">
    <p>There is no dashboard page at this address. <a href=${href()}>Go to your projects</a>.</p>
  <//>`;
}
