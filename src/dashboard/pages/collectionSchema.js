/**
 * A collection's JSON Schema: see it, set it (enforce, or warn only), remove it, and page through
 * the existing documents that fail it.
 */
import { useState } from 'preact/hooks';
import { CollectionNav } from '../components/collectionNav.js';
import { ErrorBox, Loading } from '../components/feedback.js';
import { Page } from '../components/page.js';
import { Pager } from '../components/pager.js';
import { api, dataPath } from '../lib/api.js';
import { formatTime, pretty } from '../lib/format.js';
import { useAction, useLoad } from '../lib/hooks.js';
import { html } from '../lib/html.js';
import { href } from '../lib/router.js';
import { useSession } from '../lib/session.js';

const EXAMPLE = { type: 'object', required: ['title'], properties: { title: { type: 'string' } } };

function schemaPath(at, ...rest) {
  return dataPath(at.env, at.project, at.collection, '_schema', ...rest);
}

/** The current schema, or null when the collection has none (a 404 is not an error here). */
function loadSchema(at) {
  return api('GET', schemaPath(at)).then(
    (r) => r.data,
    (error) => {
      if (error.status === 404) return null;
      throw error;
    },
  );
}

function Violations({ at, revision }) {
  const [after, setAfter] = useState([null]);
  const current = after[after.length - 1];
  const page = useLoad(
    () =>
      api(
        'GET',
        `${schemaPath(at, 'violations')}${current ? `?after=${encodeURIComponent(current)}` : ''}`,
      ).then((r) => r.data),
    [revision, current],
  );
  return html`<section class="card" aria-labelledby="violations-title">
    <h2 id="violations-title">Existing documents that fail it</h2>
    ${page.loading ? html`<${Loading} what="violations" />` : null}
    <${ErrorBox} error=${page.error} />
    ${
      page.data
        ? html`${
            page.data.data.length === 0
              ? html`<p class="empty">None ${after.length > 1 ? 'further' : ''} (${page.data.meta.scanned} documents read).</p>`
              : html`<ul class="violations" aria-label="Failing documents">
                ${page.data.data.map(
                  (v) => html`<li>
                    <a class="mono" href=${href('p', at.project, at.env, 'c', at.collection, 'd', v._id)}>${v._id}</a>
                    <ul>${v.errors.map((e) => html`<li><code>${e.instancePath || '/'}</code> ${e.message}</li>`)}</ul>
                  </li>`,
                )}
              </ul>`
          }
          <${Pager} cursors=${after} onChange=${setAfter} meta=${page.data.meta} back="Back" more="More" />`
        : null
    }
  </section>`;
}

function Editor({ at, current, onSaved }) {
  const { notify } = useSession();
  const [text, setText] = useState(() => pretty(current?.schema ?? EXAMPLE));
  const [mode, setMode] = useState(current?.mode ?? 'enforce');
  const [run, { busy, error, clear, setError }] = useAction();
  const save = (event) => {
    event.preventDefault();
    let schema;
    try {
      schema = JSON.parse(text);
    } catch (failure) {
      setError({ message: `The schema is not JSON: ${failure.message}` });
      return;
    }
    run(async () => {
      await api('PUT', schemaPath(at), { body: { schema, mode } });
      notify(`Schema of ${at.collection} saved (${mode}).`);
      onSaved();
    });
  };
  const remove = () => {
    if (!window.confirm(`Remove the schema of ${at.collection}? Writes will no longer be checked.`)) return;
    run(async () => {
      await api('DELETE', schemaPath(at));
      notify(`Schema of ${at.collection} removed.`);
      onSaved();
    });
  };
  return html`<form class="card" onSubmit=${save} aria-label="Schema">
    <div class="field">
      <label for="schema-text">JSON Schema (draft 2020-12) of the documents' fields</label>
      <textarea id="schema-text" class="mono" rows="16" value=${text} onInput=${(e) => setText(e.currentTarget.value)} />
    </div>
    <div class="field">
      <label for="schema-mode">Mode</label>
      <select id="schema-mode" value=${mode} onChange=${(e) => setMode(e.currentTarget.value)}>
        <option value="enforce">enforce — refuse writes that fail it (422)</option>
        <option value="warn">warn — let them through, log and count them</option>
      </select>
    </div>
    <${ErrorBox} error=${error} onDismiss=${clear} />
    <div class="actions">
      <button type="submit" class="primary" disabled=${busy}>Save schema</button>
      ${current ? html`<button type="button" class="danger" disabled=${busy} onClick=${remove}>Remove schema</button>` : null}
    </div>
  </form>`;
}

export function SchemaPage({ project, env, collection }) {
  const at = { project, env, collection };
  const loaded = useLoad(() => loadSchema(at), []);
  return html`<${Page} title=${`${collection}: schema`}>
    <${CollectionNav} project=${project} env=${env} collection=${collection} current="schema" />
    ${loaded.loading && loaded.data === undefined ? html`<${Loading} what="the schema" />` : null}
    <${ErrorBox} error=${loaded.error} />
    ${
      loaded.data !== undefined
        ? html`<p>
              ${
                loaded.data
                  ? html`Mode <strong>${loaded.data.mode}</strong>, set ${formatTime(loaded.data.updatedAt)}.`
                  : 'This collection has no schema: any JSON object is accepted.'
              }
            </p>
            <${Editor} key=${loaded.data?.revision ?? 'none'} at=${at} current=${loaded.data} onSaved=${loaded.reload} />
            ${loaded.data ? html`<${Violations} at=${at} revision=${loaded.data.revision} />` : null}`
        : null
    }
  <//>`;
}
