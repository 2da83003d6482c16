/**
 * The Folio dashboard: a page of ES modules (preact + htm, no build step) served by Folio at
 * /dashboard. It talks to Folio's session-authenticated /api routes with the session cookie.
 */
import { Fragment, render } from 'preact';
import { useCallback, useEffect, useState } from 'preact/hooks';
import { Layout } from './components/layout.js';
import { ProjectGate } from './components/projectGate.js';
import { onSessionLost, session, setCsrfToken } from './lib/api.js';
import { html } from './lib/html.js';
import { navigate, parseHash, useRoute } from './lib/router.js';
import { SessionContext } from './lib/session.js';
import { SchemaPage } from './pages/collectionSchema.js';
import { CollectionsPage } from './pages/collections.js';
import { DocumentPage } from './pages/document.js';
import { DocumentsPage } from './pages/documents.js';
import { KeysPage } from './pages/keys.js';
import { LivePage } from './pages/live.js';
import { LoginPage } from './pages/login.js';
import { NotFoundPage } from './pages/notFound.js';
import { PlanPage } from './pages/plan.js';
import { ProjectSettingsPage } from './pages/projectSettings.js';
import { ProjectsPage } from './pages/projects.js';
import { TransferPage } from './pages/transfer.js';
import { TrashPage } from './pages/trash.js';
import { WebhookPage, WebhooksPage } from './pages/webhooks.js';

/**
 * Which page a signed-in route shows. Each path gets a fresh page (keyed by path), so a form
 * never starts with the state of the page before.
 */
function pageFor(route) {
  const [top, project, third] = route.segments;
  const n = route.segments.length;
  if (n === 0) return html`<${ProjectsPage} />`;
  if (top === 'plan' && n === 1) return html`<${PlanPage} />`;
  if (top !== 'p' || !project || !third) return html`<${NotFoundPage} />`;
  return html`<${ProjectGate} project=${project}>${projectPage(route)}<//>`;
}

/** The page of a route under `#/p/{project}/`, once the project is known to be the account's. */
function projectPage(route) {
  const [, project, third, c, collection, sixth, id] = route.segments;
  const n = route.segments.length;
  if (n === 3 && third === 'keys') return html`<${KeysPage} project=${project} />`;
  if (n === 3 && third === 'settings') return html`<${ProjectSettingsPage} project=${project} />`;
  if (third !== 'live' && third !== 'test') return html`<${NotFoundPage} />`;
  const env = third;
  if (n === 3) return html`<${CollectionsPage} project=${project} env=${env} />`;
  if (c !== 'c' || !collection) return html`<${NotFoundPage} />`;
  const at = { project, env, collection };
  if (n === 5) return html`<${DocumentsPage} ...${at} query=${route.query} />`;
  if (n === 7 && sixth === 'd') return html`<${DocumentPage} ...${at} id=${id} />`;
  if (n === 6 && sixth === 'live') return html`<${LivePage} ...${at} />`;
  if (n === 6 && sixth === 'webhooks') return html`<${WebhooksPage} ...${at} />`;
  if (n === 6 && sixth === 'transfer') return html`<${TransferPage} ...${at} />`;
  if (n === 6 && sixth === 'trash') return html`<${TrashPage} ...${at} />`;
  if (n === 6 && sixth === 'schema') return html`<${SchemaPage} ...${at} />`;
  if (n === 7 && sixth === 'webhooks') return html`<${WebhookPage} ...${at} id=${id} />`;
  return html`<${NotFoundPage} />`;
}

function App() {
  const route = useRoute();
  const [account, setAccount] = useState(undefined);
  // A notice belongs to the page it was given on (read after any navigate()); others hide it.
  const [notice, setNotice] = useState({ text: '', path: '' });
  const [lostMessage, setLostMessage] = useState('');

  useEffect(() => {
    session.current().then(
      ({ data }) => {
        setCsrfToken(data.csrfToken);
        setAccount(data.account);
      },
      () => setAccount(null),
    );
    onSessionLost(() => {
      setAccount(null);
      setLostMessage('Your session has ended. Log in again to continue.');
    });
  }, []);

  const notify = useCallback((text) => setNotice({ text, path: parseHash(window.location.hash).path }), []);

  const signedIn = useCallback((data) => {
    setCsrfToken(data.csrfToken);
    setAccount(data.account);
    setLostMessage('');
    if (['login', 'signup'].includes(parseHash(window.location.hash).segments[0])) navigate('#/');
  }, []);

  const logout = useCallback(async () => {
    try {
      await session.logout();
    } finally {
      setCsrfToken('');
      setAccount(null);
      setLostMessage('You are logged out.');
      navigate('#/login');
    }
  }, []);

  if (account === undefined) return html`<p class="boot" role="status">Loading the Folio dashboard…</p>`;
  if (account === null) {
    return html`<main id="main" tabindex="-1" class="signed-out">
      <${LoginPage} mode=${route.segments[0] === 'signup' ? 'signup' : 'login'} message=${lostMessage} onSignedIn=${signedIn} />
    </main>`;
  }
  const context = { account, setAccount, notify };
  const shown = notice.path === route.path ? notice.text : '';
  return html`<${SessionContext.Provider} value=${context}>
    <${Layout} route=${route} notice=${shown} onLogout=${logout}>
      <${Fragment} key=${route.path}>${pageFor(route)}<//>
    <//>
  <//>`;
}

render(html`<${App} />`, document.getElementById('app'));
