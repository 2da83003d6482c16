/** The frame of every signed-in page: skip link, header with navigation and account, main. */
import { html } from '../lib/html.js';
import { href } from '../lib/router.js';
import { useSession } from '../lib/session.js';
import { Notice } from './feedback.js';

function NavLink({ to, current, children }) {
  return html`<a href=${to} aria-current=${current ? 'page' : undefined}>${children}</a>`;
}

export function Layout({ route, notice, onLogout, children }) {
  const { account } = useSession();
  const top = route.segments[0] ?? '';
  return html`<a class="skip" href="#main" onClick=${skipToMain}>Skip to content</a>
    <header class="top">
      <a class="brand" href=${href()}>Folio</a>
      <nav aria-label="Main">
        <${NavLink} to=${href()} current=${top === '' || top === 'p'}>Projects<//>
        <${NavLink} to=${href('plan')} current=${top === 'plan'}>Plan<//>
      </nav>
      <div class="account">
        <span class="who">${account.email} · <span class="plan-badge">${account.plan}</span></span>
        <button type="button" class="link" onClick=${onLogout}>Log out</button>
      </div>
    </header>
    <main id="main" tabindex="-1"><${Notice} text=${notice} />${children}</main>`;
}

/** The hash is the router's: move focus without changing it. */
function skipToMain(event) {
  event.preventDefault();
  document.getElementById('main')?.focus();
}
