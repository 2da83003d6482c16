/** The document browser: filter, sort and page with the API's query language; create a document. */
import { useState } from 'preact/hooks';
import { CollectionNav } from '../components/collectionNav.js';
import { ErrorBox, Loading } from '../components/feedback.js';
import { Page } from '../components/page.js';
import { api, dataPath } from '../lib/api.js';
import { formatNumber, formatTime, pretty, preview, userFields } from '../lib/format.js';
import { useAction, useLoad } from '../lib/hooks.js';
import { html } from '../lib/html.js';
import {
  formFromQuery,
  OPERATORS,
  PAGE_SIZES,
  queryFromForm,
  readableQuery,
  withOffset,
} from '../lib/query.js';
import { href, navigate } from '../lib/router.js';
import { useSession } from '../lib/session.js';

function FilterRow({ row, index, onChange, onRemove }) {
  const id = (part) => `filter-${index}-${part}`;
  const set = (patch) => onChange(index, { ...row, ...patch });
  return html`<fieldset class="filter-row">
    <legend class="sr-only">Filter ${index + 1}</legend>
    <div class="field">
      <label for=${id('field')}>Field</label>
      <input id=${id('field')} class="mono" placeholder="address.city" value=${row.field}
        onInput=${(e) => set({ field: e.currentTarget.value })} />
    </div>
    <div class="field">
      <label for=${id('op')}>Operator</label>
      <select id=${id('op')} value=${row.op} onChange=${(e) => set({ op: e.currentTarget.value })}>
        ${OPERATORS.map(([op, label]) => html`<option value=${op}>${op} — ${label}</option>`)}
      </select>
    </div>
    <div class="field">
      <label for=${id('value')}>Value</label>
      <input id=${id('value')} class="mono" value=${row.value} onInput=${(e) => set({ value: e.currentTarget.value })} />
    </div>
    <div class="field action">
      <span class="label-space" aria-hidden="true">${'\u00a0'}</span>
      <button type="button" class="link remove" aria-label=${`Remove filter ${index + 1}`} onClick=${() => onRemove(index)}>Remove</button>
    </div>
  </fieldset>`;
}

function QueryForm({ query, onApply }) {
  // Keyed by its query: a new query (back, a link) gives a new form.
  const [form, setForm] = useState(() => formFromQuery(query));
  const setRow = (index, row) =>
    setForm((f) => ({ ...f, rows: f.rows.map((r, i) => (i === index ? row : r)) }));
  const removeRow = (index) => setForm((f) => ({ ...f, rows: f.rows.filter((_, i) => i !== index) }));
  const addRow = () => setForm((f) => ({ ...f, rows: [...f.rows, { field: '', op: 'eq', value: '' }] }));
  const submit = (event) => {
    event.preventDefault();
    onApply(queryFromForm(form));
  };
  const built = readableQuery(queryFromForm(form));
  return html`<form class="card query" onSubmit=${submit} aria-label="Query">
    <h2>Query</h2>
    ${form.rows.map(
      (row, index) =>
        html`<${FilterRow} key=${index} row=${row} index=${index} onChange=${setRow} onRemove=${removeRow} />`,
    )}
    <p class="add-filter"><button type="button" onClick=${addRow}>Add filter</button></p>
    <div class="row">
      <div class="field">
        <label for="sort">Sort</label>
        <input id="sort" class="mono" placeholder="-$updatedAt,name" value=${form.sort} aria-describedby="sort-hint"
          onInput=${(e) => setForm({ ...form, sort: e.currentTarget.value })} />
      </div>
      <div class="field">
        <label for="limit">Per page</label>
        <select id="limit" value=${String(form.limit)} onChange=${(e) => setForm({ ...form, limit: Number(e.currentTarget.value) })}>
          ${PAGE_SIZES.map((n) => html`<option value=${String(n)}>${n}</option>`)}
        </select>
      </div>
    </div>
    <p class="hint" id="sort-hint">Sort: field names, comma-separated; a leading - sorts descending.</p>
    <p class="hint">API query: <code class="api-query">${built ? `?${built}` : '(none)'}</code></p>
    <button type="submit" class="primary">Apply</button>
  </form>`;
}

function NewDocument({ project, env, collection, onCreated }) {
  const [open, setOpen] = useState(false);
  const [text, setText] = useState('{\n  \n}');
  const [, { busy, error, runJson }] = useAction();
  const submit = (event) => {
    event.preventDefault();
    runJson(text, async (body) => {
      const { data } = await api('POST', dataPath(env, project, collection), { body });
      onCreated(data);
    });
  };
  if (!open) return html`<button type="button" onClick=${() => setOpen(true)}>New document</button>`;
  return html`<form class="card" onSubmit=${submit}>
    <h2>New document</h2>
    <div class="field">
      <label for="new-document">Document JSON</label>
      <textarea id="new-document" class="mono" rows="8" spellcheck="false" value=${text}
        aria-describedby="new-document-hint" onInput=${(e) => setText(e.currentTarget.value)}></textarea>
      <p class="hint" id="new-document-hint">A JSON object; give "_id" to choose the id, or let Folio make one.</p>
    </div>
    <${ErrorBox} error=${error} />
    <button type="submit" class="primary" disabled=${busy}>Create</button>
    <button type="button" class="link" onClick=${() => setOpen(false)}>Cancel</button>
  </form>`;
}

/** Field columns shown before "Show all fields". */
export const FIRST_COLUMNS = 5;

/** The top-level user fields of the page's documents, in the order they first appear. */
function fieldNames(docs) {
  const names = new Set();
  for (const doc of docs) for (const name of Object.keys(userFields(doc))) names.add(name);
  return [...names];
}

/** One cell: text as is, other scalars as JSON, objects and arrays as one line of JSON. */
function FieldCell({ doc, name }) {
  if (!Object.hasOwn(doc, name)) return html`<td class="absent"><span class="sr-only">absent</span></td>`;
  const value = doc[name];
  if (typeof value === 'string')
    return html`<td class="text" title=${value.length > 40 ? value : undefined}>${value}</td>`;
  if (value !== null && typeof value === 'object') {
    return html`<td class="mono preview" title=${pretty(value)}>${preview(value, 60)}</td>`;
  }
  return html`<td class=${typeof value === 'number' ? 'num mono' : 'mono'}>${JSON.stringify(value)}</td>`;
}

function DocumentTable({ docs, project, env, collection }) {
  const [allColumns, setAllColumns] = useState(false);
  const names = fieldNames(docs);
  const shown = allColumns ? names : names.slice(0, FIRST_COLUMNS);
  const hidden = names.length - shown.length;
  return html`<div class="table-tools">
      ${
        names.length > FIRST_COLUMNS
          ? html`<button type="button" class="link" aria-expanded=${allColumns ? 'true' : 'false'}
              onClick=${() => setAllColumns(!allColumns)}>
              ${allColumns ? `Show the first ${FIRST_COLUMNS} fields only` : `Show all ${names.length} fields (${hidden} more)`}
            </button>`
          : null
      }
    </div>
    <div class="table-scroll">
    <table class="list documents">
      <caption class="sr-only">Documents of ${collection}</caption>
      <thead><tr>
        <th scope="col">_id</th>
        ${shown.map((name) => html`<th scope="col" class="field-name">${name}</th>`)}
        <th scope="col" class="num">$version</th><th scope="col">$updatedAt</th>
      </tr></thead>
      <tbody>
        ${docs.map(
          (doc) => html`<tr>
            <th scope="row"><a class="mono" href=${href('p', project, env, 'c', collection, 'd', doc._id)}>${doc._id}</a></th>
            ${shown.map((name) => html`<${FieldCell} doc=${doc} name=${name} />`)}
            <td class="num">${doc.$version}</td>
            <td><time datetime=${doc.$updatedAt}>${formatTime(doc.$updatedAt)}</time></td>
          </tr>`,
        )}
      </tbody>
    </table>
    </div>`;
}

export function DocumentsPage({ project, env, collection, query }) {
  const { notify } = useSession();
  const queryText = query.toString();
  const page = useLoad(async () => {
    const { data } = await api(
      'GET',
      `${dataPath(env, project, collection)}${queryText ? `?${queryText}` : ''}`,
    );
    return data;
  }, [project, env, collection, queryText]);
  const here = (q) => href('p', project, env, 'c', collection, q);

  const meta = page.data?.meta;
  const docs = page.data?.data ?? [];
  const first = meta ? meta.offset + 1 : 0;
  const last = meta ? meta.offset + docs.length : 0;

  return html`<${Page} title=${`${collection} · ${project} (${env})`}>
    <${CollectionNav} project=${project} env=${env} collection=${collection} current="documents" />
    <${QueryForm} key=${queryText} query=${query} onApply=${(q) => navigate(here(q))} />
    <${NewDocument} project=${project} env=${env} collection=${collection}
      onCreated=${(doc) => {
        navigate(href('p', project, env, 'c', collection, 'd', doc._id));
        notify(`Document ${doc._id} created.`);
      }} />
    <${ErrorBox} error=${page.error} />
    ${page.loading && !page.data ? html`<${Loading} what="documents" />` : null}
    ${
      meta
        ? html`<p class="summary" role="status">
            ${meta.total === 0 ? 'No document matches.' : `Documents ${formatNumber(first)}–${formatNumber(last)} of ${formatNumber(meta.total)}`}
          </p>`
        : null
    }
    ${
      docs.length > 0
        ? html`<${DocumentTable} docs=${docs} project=${project} env=${env} collection=${collection} />`
        : null
    }
    ${
      meta && (meta.offset > 0 || meta.hasMore)
        ? html`<nav class="pager" aria-label="Pages">
            ${
              meta.offset > 0
                ? html`<a href=${here(withOffset(query, Math.max(0, meta.offset - meta.limit)))}>Previous page</a>`
                : html`<span class="disabled">Previous page</span>`
            }
            ${
              meta.hasMore
                ? html`<a href=${here(withOffset(query, meta.offset + meta.limit))}>Next page</a>`
                : html`<span class="disabled">Next page</span>`
            }
          </nav>`
        : null
    }
  <//>`;
}
