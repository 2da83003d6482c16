/**
 * A collection's webhooks: register one (its secret shown once), see each one's status and
 * delivery history, re-enable or disable it, send a test event, rotate its secret, delete it.
 */
import { useState } from 'preact/hooks';
import { CollectionNav } from '../components/collectionNav.js';
import { ErrorBox, Loading } from '../components/feedback.js';
import { Page } from '../components/page.js';
import { SecretDialog } from '../components/secretDialog.js';
import { api, dataPath } from '../lib/api.js';
import { formatTime } from '../lib/format.js';
import { useAction, useLoad, useToggleSet } from '../lib/hooks.js';
import { html } from '../lib/html.js';
import { href, navigate } from '../lib/router.js';
import { useSession } from '../lib/session.js';

const EVENTS = ['document.created', 'document.updated', 'document.deleted'];
const SECRET_NOTE =
  'Copy this signing secret now: Folio shows it only here. Your receiver checks X-Service-Signature with it.';

function hooksPath(at, ...rest) {
  return dataPath(at.env, at.project, at.collection, '_webhooks', ...rest);
}

function Status({ webhook }) {
  return html`<span class=${`status status-${webhook.status}`}>${webhook.status}</span>`;
}

function RegisterForm({ at, onRegistered }) {
  const [url, setUrl] = useState('');
  const [description, setDescription] = useState('');
  const [events, toggle] = useToggleSet(EVENTS);
  const [run, { busy, error }] = useAction();
  const submit = (e) => {
    e.preventDefault();
    run(async () => {
      const body = { url: url.trim(), events: EVENTS.filter((x) => events.has(x)), description };
      const { data } = await api('POST', hooksPath(at), { body });
      setUrl('');
      setDescription('');
      onRegistered(data);
    });
  };
  return html`<form class="card" onSubmit=${submit}>
    <h2>New webhook</h2>
    <div class="field">
      <label for="webhook-url">Receiver URL</label>
      <input id="webhook-url" type="url" required class="mono" placeholder="https://example.com/hooks/folio"
        value=${url} onInput=${(e) => setUrl(e.currentTarget.value)} />
    </div>
    <fieldset>
      <legend>Events</legend>
      ${EVENTS.map(
        (event) => html`<label class="choice">
          <input type="checkbox" checked=${events.has(event)} onChange=${() => toggle(event)} /> ${event}
        </label>`,
      )}
    </fieldset>
    <div class="field">
      <label for="webhook-description">Description (optional)</label>
      <input id="webhook-description" maxlength="500" value=${description}
        onInput=${(e) => setDescription(e.currentTarget.value)} />
    </div>
    <${ErrorBox} error=${error} />
    <button type="submit" class="primary" disabled=${busy}>Register webhook</button>
  </form>`;
}

export function WebhooksPage(at) {
  const list = useLoad(
    () => api('GET', hooksPath(at)).then((r) => r.data.webhooks),
    [at.project, at.env, at.collection],
  );
  const [secret, setSecret] = useState(null);
  const registered = (data) => {
    setSecret({ title: `Webhook registered for ${data.url}`, value: data.secret, id: data.id });
    list.reload();
  };
  return html`<${Page} title=${`Webhooks · ${at.collection} · ${at.project} (${at.env})`}>
    <${CollectionNav} ...${at} current="webhooks" />
    <${ErrorBox} error=${list.error} />
    ${list.loading && !list.data ? html`<${Loading} what="webhooks" />` : null}
    ${
      list.data
        ? list.data.length === 0
          ? html`<p>No webhook on this collection yet.</p>`
          : html`<table class="list">
              <caption class="sr-only">Webhooks of ${at.collection}</caption>
              <thead><tr><th scope="col">Receiver</th><th scope="col">Events</th><th scope="col">Status</th>
                <th scope="col" class="num">Failures in a row</th><th scope="col">Description</th></tr></thead>
              <tbody>
                ${list.data.map(
                  (w) => html`<tr>
                    <th scope="row"><a class="mono" href=${href('p', at.project, at.env, 'c', at.collection, 'webhooks', w.id)}>${w.url}</a></th>
                    <td>${w.events.join(', ')}</td>
                    <td><${Status} webhook=${w} /></td>
                    <td class="num">${w.consecutiveFailures}</td>
                    <td>${w.description}</td>
                  </tr>`,
                )}
              </tbody>
            </table>`
        : null
    }
    <${RegisterForm} at=${at} onRegistered=${registered} />
    <${SecretDialog} title=${secret?.title} secret=${secret?.value} label="Signing secret"
      explanation=${SECRET_NOTE} onClose=${() => setSecret(null)} />
  <//>`;
}

function Deliveries({ deliveries }) {
  if (deliveries.length === 0) return html`<p>No delivery yet.</p>`;
  return html`<table class="list">
    <caption>Recent deliveries, newest first</caption>
    <thead><tr><th scope="col">Event</th><th scope="col">Status</th><th scope="col" class="num">Attempts</th>
      <th scope="col">Last answer</th><th scope="col">Next retry</th><th scope="col">Created</th></tr></thead>
    <tbody>
      ${deliveries.map((d) => {
        const last = d.attempts[d.attempts.length - 1];
        return html`<tr>
          <th scope="row"><span class="mono">${d.event}</span><br /><span class="hint mono">${d.id}</span></th>
          <td><span class=${`status status-${d.status}`}>${d.status}</span></td>
          <td class="num">${d.attempts.length}</td>
          <td>${last ? (last.error ?? `HTTP ${last.statusCode}`) : '—'}${last ? html` <span class="hint">(${last.durationMs} ms)</span>` : null}</td>
          <td>${last?.nextRetryAt ? html`<time datetime=${last.nextRetryAt}>${formatTime(last.nextRetryAt)}</time>` : '—'}</td>
          <td><time datetime=${d.createdAt}>${formatTime(d.createdAt)}</time></td>
        </tr>`;
      })}
    </tbody>
  </table>`;
}

export function WebhookPage({ id, ...at }) {
  const { notify } = useSession();
  const loaded = useLoad(
    () => api('GET', hooksPath(at, id)).then((r) => r.data),
    [at.project, at.env, at.collection, id],
  );
  const [secret, setSecret] = useState(null);
  const [run, { busy, error }] = useAction();
  const webhook = loaded.data;

  const setStatus = (status) =>
    run(async () => {
      await api('PATCH', hooksPath(at, id), { body: { status } });
      notify(
        status === 'active' ? 'Webhook re-enabled; its failure count starts afresh.' : 'Webhook disabled.',
      );
      loaded.reload();
    });
  const test = () =>
    run(async () => {
      const { data } = await api('POST', hooksPath(at, id, 'test'));
      const last = data.attempts[data.attempts.length - 1];
      notify(
        `Test event sent: ${data.status}${last ? ` (${last.error ?? `HTTP ${last.statusCode}`})` : ''}.`,
      );
      loaded.reload();
    });
  const rotate = () =>
    run(async () => {
      if (!window.confirm('Rotate the signing secret? Deliveries are signed with the new one from now on.'))
        return;
      const { data } = await api('POST', hooksPath(at, id, 'rotate-secret'));
      setSecret(data.secret);
    });
  const remove = () =>
    run(async () => {
      if (!window.confirm('Delete this webhook and its delivery history?')) return;
      await api('DELETE', hooksPath(at, id));
      navigate(href('p', at.project, at.env, 'c', at.collection, 'webhooks'));
      notify('Webhook deleted.');
    });

  return html`<${Page} title=${`Webhook ${id}`}>
    <${CollectionNav} ...${at} current="webhooks" />
    <${ErrorBox} error=${loaded.error} />
    ${loaded.loading && !webhook ? html`<${Loading} what="the webhook" />` : null}
    ${
      webhook
        ? html`<section class="card" aria-labelledby="webhook-title">
              <h2 id="webhook-title">Receiver <span class="mono">${webhook.url}</span></h2>
              <dl class="meta">
                <div><dt>Status</dt><dd><${Status} webhook=${webhook} /></dd></div>
                <div><dt>Failed deliveries in a row</dt><dd>${webhook.consecutiveFailures}</dd></div>
                <div><dt>Events</dt><dd>${webhook.events.join(', ')}</dd></div>
                <div><dt>Updated</dt><dd><time datetime=${webhook.updatedAt}>${formatTime(webhook.updatedAt)}</time></dd></div>
              </dl>
              ${webhook.status === 'disabled' ? html`<p class="warning">Folio disabled this webhook after repeated failed deliveries, or its owner did. Fix the receiver, then re-enable it.</p>` : null}
              <${ErrorBox} error=${error} />
              <div class="buttons">
                ${
                  webhook.status === 'disabled'
                    ? html`<button type="button" class="primary" disabled=${busy} onClick=${() => setStatus('active')}>Re-enable</button>`
                    : html`<button type="button" disabled=${busy} onClick=${() => setStatus('disabled')}>Disable</button>`
                }
                <button type="button" disabled=${busy} onClick=${test}>Send test event</button>
                <button type="button" disabled=${busy} onClick=${rotate}>Rotate secret</button>
                <button type="button" class="danger" disabled=${busy} onClick=${remove}>Delete webhook</button>
                <button type="button" class="link" onClick=${loaded.reload}>Refresh</button>
              </div>
            </section>
            <section class="card" aria-label="Deliveries"><${Deliveries} deliveries=${webhook.deliveries} /></section>`
        : null
    }
    <${SecretDialog} title="Webhook secret rotated" secret=${secret} label="Signing secret"
      explanation=${SECRET_NOTE} onClose=${() => setSecret(null)} />
  <//>`;
}
