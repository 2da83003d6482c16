/**
 * One document: edit it as JSON (PUT with If-Match, so a concurrent change is reported rather
 * than overwritten), delete it, list its versions, compare two side by side, restore one.
 */
import { useEffect, useState } from 'preact/hooks';
import { CollectionNav } from '../components/collectionNav.js';
import { ErrorBox, Loading } from '../components/feedback.js';
import { Page } from '../components/page.js';
import { api, dataPath } from '../lib/api.js';
import { formatTime, pretty, userFields } from '../lib/format.js';
import { useAction, useLoad, useOnChange } from '../lib/hooks.js';
import { html } from '../lib/html.js';
import { href, navigate } from '../lib/router.js';
import { useSession } from '../lib/session.js';

function Editor({ doc, path, onSaved, onDeleted }) {
  // Keyed by the document's version: a saved or restored version gives a fresh editor.
  const [text, setText] = useState(() => pretty(userFields(doc)));
  const [run, { busy, error, runJson }] = useAction();
  const ifMatch = { 'If-Match': `"${doc.$version}"` };

  const save = (event) => {
    event.preventDefault();
    runJson(text, async (body) => onSaved((await api('PUT', path, { body, headers: ifMatch })).data));
  };
  const remove = () =>
    run(async () => {
      if (!window.confirm(`Delete document ${doc._id} and its whole history?`)) return;
      await api('DELETE', path, { headers: ifMatch });
      onDeleted();
    });

  return html`<form class="card" onSubmit=${save}>
    <h2>Content</h2>
    <dl class="meta">
      <div><dt>$version</dt><dd>${doc.$version}</dd></div>
      <div><dt>$createdAt</dt><dd><time datetime=${doc.$createdAt}>${formatTime(doc.$createdAt)}</time></dd></div>
      <div><dt>$updatedAt</dt><dd><time datetime=${doc.$updatedAt}>${formatTime(doc.$updatedAt)}</time></dd></div>
    </dl>
    <div class="field">
      <label for="document-json">Document JSON (user fields)</label>
      <textarea id="document-json" class="mono" rows=${Math.min(30, Math.max(8, text.split('\n').length + 1))}
        spellcheck="false" aria-describedby="document-json-hint" value=${text}
        onInput=${(e) => setText(e.currentTarget.value)}></textarea>
      <p class="hint" id="document-json-hint">Saving replaces the whole document (PUT) if it is still at version ${doc.$version}.</p>
    </div>
    <${ErrorBox} error=${error} />
    <div class="buttons">
      <button type="submit" class="primary" disabled=${busy}>Save</button>
      <button type="button" class="danger" disabled=${busy} onClick=${remove}>Delete document</button>
    </div>
  </form>`;
}

function ChangeValue({ value }) {
  return value === undefined
    ? html`<span class="absent">—</span>`
    : html`<code>${JSON.stringify(value)}</code>`;
}

/** Two versions side by side: the field-level changes, then both documents in full. */
function Comparison({ path, from, to }) {
  const versions = useLoad(
    () =>
      Promise.all([api('GET', `${path}/versions/${from}`), api('GET', `${path}/versions/${to}`)]).then((r) =>
        r.map((x) => x.data),
      ),
    [path, from, to],
  );
  const diff = useLoad(
    () => api('GET', `${path}/versions/diff?from=${from}&to=${to}`).then((r) => r.data),
    [path, from, to],
  );
  return html`<section class="comparison" aria-labelledby="comparison-title">
    <h3 id="comparison-title">Version ${from} → version ${to}</h3>
    <${ErrorBox} error=${diff.error} />
    ${
      diff.data
        ? diff.data.changes.length === 0
          ? html`<p>No field differs.</p>`
          : html`<table class="list diff">
              <caption>Changed fields</caption>
              <thead><tr><th scope="col">Field</th><th scope="col">Change</th>
                <th scope="col">Version ${from}</th><th scope="col">Version ${to}</th></tr></thead>
              <tbody>
                ${diff.data.changes.map(
                  (change) => html`<tr class=${`change-${change.type}`}>
                    <th scope="row"><code>${change.path}</code></th>
                    <td>${change.type}</td>
                    <td class="before"><${ChangeValue} value=${change.type === 'changed' ? change.from : change.type === 'removed' ? change.value : undefined} /></td>
                    <td class="after"><${ChangeValue} value=${change.type === 'changed' ? change.to : change.type === 'added' ? change.value : undefined} /></td>
                  </tr>`,
                )}
              </tbody>
            </table>`
        : null
    }
    <${ErrorBox} error=${versions.error} />
    ${
      versions.data
        ? html`<div class="side-by-side">
            <figure><figcaption>Version ${from}</figcaption><pre class="mono" tabindex="0">${pretty(userFields(versions.data[0]))}</pre></figure>
            <figure><figcaption>Version ${to}</figcaption><pre class="mono" tabindex="0">${pretty(userFields(versions.data[1]))}</pre></figure>
          </div>`
        : null
    }
  </section>`;
}

function History({ path, doc, onRestored }) {
  const list = useLoad(
    () => api('GET', `${path}/versions`).then((r) => r.data.versions),
    [path, doc.$version],
  );
  const numbers = (list.data ?? []).map((v) => v.version);
  const [pair, setPair] = useState(null);
  // Unchosen versions default to the one before the current one against the current one.
  const [chosenFrom, setFrom] = useState(null);
  const [chosenTo, setTo] = useState(null);
  const from = chosenFrom ?? String(numbers[1] ?? numbers[0] ?? '');
  const to = chosenTo ?? String(numbers[0] ?? '');
  // A new version (saved, restored) starts the choice afresh. Keyed by the version, not by the
  // list: the list's first arrival must not undo a choice made as soon as its options showed.
  useOnChange(doc.$version, () => {
    setFrom(null);
    setTo(null);
    setPair(null);
  });
  const [run, { busy, error }] = useAction();
  const restore = (version) =>
    run(async () => {
      const { data } = await api('POST', `${path}/versions/${version}/restore`, {
        headers: { 'If-Match': `"${doc.$version}"` },
      });
      onRestored(data, version);
    });
  const compare = (event) => {
    event.preventDefault();
    setPair({ from: Number(from), to: Number(to) });
  };

  return html`<section class="card" aria-labelledby="history-title">
    <h2 id="history-title">Version history</h2>
    <${ErrorBox} error=${list.error} />
    <${ErrorBox} error=${error} />
    ${list.loading && !list.data ? html`<${Loading} what="versions" />` : null}
    ${
      list.data
        ? html`<table class="list">
            <caption class="sr-only">Versions, newest first</caption>
            <thead><tr><th scope="col" class="num">Version</th><th scope="col">Operation</th>
              <th scope="col">When</th><th scope="col">By</th><th scope="col">Actions</th></tr></thead>
            <tbody>
              ${list.data.map(
                (v) => html`<tr>
                  <th scope="row" class="num">${v.version}</th>
                  <td>${v.operation}</td>
                  <td><time datetime=${v.timestamp}>${formatTime(v.timestamp)}</time></td>
                  <td><code>${v.apiKeyHint}</code></td>
                  <td class="actions">${
                    v.version === doc.$version
                      ? html`<span class="tag">current</span>`
                      : html`<button type="button" disabled=${busy} aria-label=${`Restore version ${v.version}`}
                          onClick=${() => restore(v.version)}>Restore</button>`
                  }</td>
                </tr>`,
              )}
            </tbody>
          </table>`
        : null
    }
    ${
      numbers.length > 1
        ? html`<form class="row compare" onSubmit=${compare}>
            <${VersionSelect} id="compare-from" label="From version" numbers=${numbers} value=${from} onChange=${setFrom} />
            <${VersionSelect} id="compare-to" label="To version" numbers=${numbers} value=${to} onChange=${setTo} />
            <button type="submit">Compare</button>
          </form>`
        : null
    }
    ${pair ? html`<${Comparison} path=${path} from=${pair.from} to=${pair.to} />` : null}
  </section>`;
}

/** A choice among the document's version numbers. */
function VersionSelect({ id, label, numbers, value, onChange }) {
  return html`<div class="field">
    <label for=${id}>${label}</label>
    <select id=${id} value=${value} onChange=${(e) => onChange(e.currentTarget.value)}>
      ${numbers.map((n) => html`<option value=${String(n)}>${n}</option>`)}
    </select>
  </div>`;
}

export function DocumentPage({ project, env, collection, id }) {
  const { notify } = useSession();
  const path = dataPath(env, project, collection, id);
  const loaded = useLoad(() => api('GET', path).then((r) => r.data), [path]);
  const [doc, setDoc] = useState(null);
  useEffect(() => setDoc(loaded.data ?? null), [loaded.data]);

  return html`<${Page} title=${`Document ${id}`}>
    <${CollectionNav} project=${project} env=${env} collection=${collection} current="" />
    <${ErrorBox} error=${loaded.error} />
    ${loaded.loading && !doc ? html`<${Loading} what="the document" />` : null}
    ${
      doc
        ? html`<div class="document">
            <${Editor} key=${doc.$version} doc=${doc} path=${path}
              onSaved=${(saved) => {
                setDoc(saved);
                notify(`Saved: version ${saved.$version}.`);
              }}
              onDeleted=${() => {
                navigate(href('p', project, env, 'c', collection));
                notify(`Document ${id} deleted.`);
              }} />
            <${History} path=${path} doc=${doc}
              onRestored=${(restored, version) => {
                setDoc(restored);
                notify(`Version ${version} restored as version ${restored.$version}.`);
              }} />
          </div>`
        : null
    }
  <//>`;
}
