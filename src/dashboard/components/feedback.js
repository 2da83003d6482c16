/** Errors and confirmations, announced to screen readers (role alert / status). */
import { html } from '../lib/html.js';
import { href } from '../lib/router.js';

const TITLES = new Map([
  [0, 'Folio could not be reached'],
  [400, 'The request was not accepted'],
  [401, 'You are not signed in'],
  [403, 'Not allowed'],
  [404, 'Not found'],
  [405, 'Not allowed here'],
  [406, 'Format not available'],
  [409, 'Conflict'],
  [412, 'Changed in the meantime'],
  [413, 'Too large'],
  [415, 'Wrong content type'],
  [429, 'Too many requests'],
]);

function titleFor(error) {
  if (TITLES.has(error.status)) return TITLES.get(error.status);
  if (error.status >= 500) return 'Folio failed to answer';
  return 'Something went wrong';
}

function Details({ details }) {
  if (!details || typeof details !== 'object') return null;
  const entries = Object.entries(details);
  if (entries.length === 0) return null;
  return html`<dl class="error-details">
    ${entries.map(
      ([name, value]) =>
        html`<div><dt>${name}</dt><dd>${typeof value === 'string' ? value : JSON.stringify(value)}</dd></div>`,
    )}
  </dl>`;
}

/** What Folio answered, as it said it: message, code, status, details, request id. */
export function ErrorBox({ error, onDismiss }) {
  if (!error) return null;
  const planHint = error.code === 'plan_limit_exceeded' || error.code === 'plan_feature_unavailable';
  return html`<div class="error" role="alert" data-code=${error.code ?? ''}>
    <p class="error-title"><strong>${titleFor(error)}</strong></p>
    <p class="error-message">${error.message}</p>
    <${Details} details=${error.details} />
    <p class="error-meta">
      ${error.code ? html`<span>code <code>${error.code}</code></span>` : null}
      ${error.status ? html`<span>HTTP ${error.status}</span>` : null}
      ${error.requestId ? html`<span>request id <code>${error.requestId}</code></span>` : null}
    </p>
    ${planHint ? html`<p><a href=${href('plan')}>See the plans and change yours</a></p>` : null}
    ${onDismiss ? html`<button type="button" class="link" onClick=${onDismiss}>Dismiss</button>` : null}
  </div>`;
}

/** A short confirmation; polite, so it does not interrupt. */
export function Notice({ text }) {
  return html`<div class="notice" role="status" aria-live="polite">${text || ''}</div>`;
}

export function Loading({ what }) {
  return html`<p class="loading" role="status">Loading ${what}…</p>`;
}
