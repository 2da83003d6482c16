/**
 * Import a file into a collection (with upload progress) and export the collection as a file.
 * Imports go through XMLHttpRequest, whose upload events give the progress that fetch lacks;
 * exports through fetch, so a refusal (403 over the plan's export maximum) shows Folio's error.
 */
import { useRef, useState } from 'preact/hooks';
import { CollectionNav } from '../components/collectionNav.js';
import { ErrorBox } from '../components/feedback.js';
import { Page } from '../components/page.js';
import { ApiError, csrfHeader, dataPath, plans, readResponse, send } from '../lib/api.js';
import { formatBytes, formatNumber } from '../lib/format.js';
import { useAction, useLoad } from '../lib/hooks.js';
import { html } from '../lib/html.js';
import { href } from '../lib/router.js';
import { useSession } from '../lib/session.js';

const FORMATS = [
  ['csv', 'text/csv', 'CSV (header row)'],
  ['json', 'application/json', 'JSON array'],
  ['ndjson', 'application/x-ndjson', 'NDJSON (one object per line)'],
];

function formatOf(fileName) {
  const lower = fileName.toLowerCase();
  if (lower.endsWith('.csv')) return 'csv';
  if (lower.endsWith('.ndjson') || lower.endsWith('.jsonl')) return 'ndjson';
  return 'json';
}

/** Uploads `file` with progress; resolves to readResponse()'s shape or rejects with ApiError. */
function upload(url, file, contentType, onProgress) {
  return new Promise((resolve, reject) => {
    const request = new XMLHttpRequest();
    request.open('POST', url);
    request.withCredentials = true;
    request.setRequestHeader('Content-Type', contentType);
    request.setRequestHeader('Accept', 'application/json');
    for (const [name, value] of Object.entries(csrfHeader())) request.setRequestHeader(name, value);
    request.upload.onprogress = (event) =>
      onProgress(event.loaded, event.lengthComputable ? event.total : file.size);
    request.onerror = () => reject(new ApiError(0, 'network_error', 'The upload was interrupted.'));
    request.onload = () => {
      const headers = new Headers();
      for (const line of request.getAllResponseHeaders().trim().split(/\r?\n/)) {
        const colon = line.indexOf(':');
        if (colon > 0) headers.append(line.slice(0, colon).trim(), line.slice(colon + 1).trim());
      }
      readResponse(new Response(request.responseText, { status: request.status, headers })).then(
        resolve,
        reject,
      );
    };
    request.send(file);
  });
}

/** Whether an import was refused for being over the plan's size or document count. */
function overPlan(error) {
  const limit = error?.details?.limit;
  return (
    (error?.code === 'payload_too_large' && limit === 'importBytes') ||
    (error?.code === 'plan_limit_exceeded' && limit === 'importDocuments')
  );
}

/**
 * A file over what the plan takes in one request: the folio command sends it in parts the plan
 * accepts (README "Import and export from scripts"), so the page says how, for this collection.
 */
function UseTheCli({ at, fileName }) {
  const command = `FOLIO_URL=${window.location.origin} FOLIO_API_KEY=<a ${at.env} key of ${at.project}> \\
  node bin/folio.js import ${fileName || 'FILE'} -p ${at.project} -c ${at.collection}`;
  return html`<div class="cli-hint" role="note" aria-label="Import a large file with the command line">
    <p><strong>Large files go through the command line.</strong> The <code>folio</code> command (in
      Folio's directory) sends a file of any size in parts your plan accepts, and shows its
      progress:</p>
    <pre><code>${command}</code></pre>
    <p>Make a key on the <a href=${href('p', at.project, 'keys')}>API keys</a> page, or${' '}<a href=${href('plan')}>change your plan</a> for larger imports from here.</p>
  </div>`;
}

function ImportForm({ at }) {
  const { account } = useSession();
  const limits = useLoad(() => plans.list().then((r) => r.data.plans[account.plan]), [account.plan]);
  const input = useRef(null);
  const [fileName, setFileName] = useState('');
  const [format, setFormat] = useState('csv');
  const [onConflict, setOnConflict] = useState('fail');
  const [progress, setProgress] = useState(null);
  const [result, setResult] = useState(null);
  const [run, { error, setError }] = useAction();
  const submit = async (event) => {
    event.preventDefault();
    const file = input.current?.files?.[0];
    if (!file) return;
    setError(null);
    setResult(null);
    setFileName(file.name);
    // Over the plan's import size the server would refuse it after the upload started: say so now.
    const maxBytes = limits.data?.maxImportBytes;
    if (maxBytes !== undefined && file.size > maxBytes) {
      setError(tooLarge(file, maxBytes, account.plan));
      return;
    }
    setProgress({ loaded: 0, total: file.size });
    const contentType = FORMATS.find(([id]) => id === format)[1];
    const url = `${dataPath(at.env, at.project, at.collection, '_import')}?onConflict=${onConflict}`;
    await run(async () => {
      try {
        const { data } = await upload(url, file, contentType, (loaded, total) =>
          setProgress({ loaded, total }),
        );
        setResult(data);
      } finally {
        setProgress(null);
      }
    });
  };
  return html`<form class="card" onSubmit=${submit}>
    <h2>Import</h2>
    <div class="row">
      <div class="field">
        <label for="import-file">File to import</label>
        <input id="import-file" type="file" required ref=${input} accept=".csv,.json,.ndjson,.jsonl"
          onChange=${(e) => e.currentTarget.files?.[0] && setFormat(formatOf(e.currentTarget.files[0].name))} />
      </div>
      <${FormatSelect} id="import-format" label="File format" value=${format} onChange=${setFormat} />
      <div class="field">
        <label for="import-conflict">When an id is taken</label>
        <select id="import-conflict" value=${onConflict} onChange=${(e) => setOnConflict(e.currentTarget.value)}>
          <option value="fail">fail: import nothing</option>
          <option value="skip">skip that record</option>
          <option value="overwrite">overwrite the document</option>
        </select>
      </div>
    </div>
    ${progress ? html`<${UploadProgress} progress=${progress} />` : null}
    <${ErrorBox} error=${error} />
    ${overPlan(error) ? html`<${UseTheCli} at=${at} fileName=${fileName} />` : null}
    ${result ? html`<${ImportResult} result=${result} />` : null}
    <button type="submit" class="primary" disabled=${progress !== null}>Import</button>
  </form>`;
}

/** Over the plan's import size: the refusal the server would give, before any byte is sent. */
function tooLarge(file, maxBytes, plan) {
  return new ApiError(
    413,
    'payload_too_large',
    `${file.name} is ${formatBytes(file.size)}; the ${plan} plan imports at most ${formatBytes(maxBytes)} per request.`,
    { limit: 'importBytes', max: maxBytes, plan },
  );
}

function UploadProgress({ progress }) {
  return html`<div class="field">
    <label for="import-progress">Uploading ${formatBytes(progress.loaded)} of ${formatBytes(progress.total)}</label>
    <progress id="import-progress" max=${progress.total || 1} value=${progress.loaded}></progress>
  </div>`;
}

/** What an import did, and the records it did not import with why. */
function ImportResult({ result }) {
  return html`<div role="status" class="notice">
      ${`Imported ${formatNumber(result.imported)}, skipped ${formatNumber(result.skipped)}, ${formatNumber(result.errors.length)} with errors, of ${formatNumber(result.total)} records.`}
    </div>
    ${
      result.errors.length > 0
        ? html`<table class="list">
            <caption>Records not imported</caption>
            <thead><tr><th scope="col" class="num">Record</th><th scope="col" class="num">Line</th>
              <th scope="col">Code</th><th scope="col">Message</th></tr></thead>
            <tbody>${result.errors.map(
              (e) => html`<tr><th scope="row" class="num">${e.index}</th><td class="num">${e.line ?? ''}</td>
                <td><code>${e.code}</code></td><td>${e.message}</td></tr>`,
            )}</tbody>
          </table>`
        : null
    }`;
}

/** A choice among the file formats import and export take. */
function FormatSelect({ id, label, value, onChange }) {
  return html`<div class="field">
    <label for=${id}>${label}</label>
    <select id=${id} value=${value} onChange=${(e) => onChange(e.currentTarget.value)}>
      ${FORMATS.map(([format, , name]) => html`<option value=${format}>${name}</option>`)}
    </select>
  </div>`;
}

function ExportForm({ at }) {
  const [format, setFormat] = useState('csv');
  const [queryText, setQueryText] = useState('');
  const [run, { busy, error }] = useAction();
  const [done, setDone] = useState('');
  const download = (event) => {
    event.preventDefault();
    setDone('');
    run(async () => {
      // The listing's own language; anything the export does not take is the API's 400 to show.
      const params = new URLSearchParams(queryText.trim().replace(/^\?/, ''));
      const type = FORMATS.find(([id]) => id === format)[1];
      const url = `${dataPath(at.env, at.project, at.collection, '_export')}${params.size ? `?${params}` : ''}`;
      const response = await send(url, { headers: { Accept: type }, credentials: 'same-origin' });
      if (!response.ok) await readResponse(response);
      const name =
        /filename="([^"]+)"/.exec(response.headers.get('Content-Disposition') ?? '')?.[1] ??
        `${at.collection}.${format}`;
      const blob = await response.blob();
      const link = document.createElement('a');
      link.href = URL.createObjectURL(blob);
      link.download = name;
      document.body.append(link);
      link.click();
      link.remove();
      setTimeout(() => URL.revokeObjectURL(link.href), 10_000);
      setDone(
        `Downloaded ${name}: ${formatNumber(Number(response.headers.get('X-Total-Count') ?? 0))} documents, ${formatBytes(blob.size)}.`,
      );
    });
  };
  return html`<form class="card" onSubmit=${download}>
    <h2>Export</h2>
    <div class="row">
    <div class="field wide">
      <label for="export-query">Filter and sort (optional)</label>
      <input id="export-query" class="mono" placeholder="filter[status]=paid&sort=-total" value=${queryText}
        aria-describedby="export-query-hint" onInput=${(e) => setQueryText(e.currentTarget.value)} />
    </div>
    <${FormatSelect} id="export-format" label="Download as" value=${format} onChange=${setFormat} />
    </div>
    <p class="hint" id="export-query-hint">Filter and sort: the listing's query language; empty exports every document.</p>
    <${ErrorBox} error=${error} />
    ${done ? html`<p role="status" class="notice">${done}</p>` : null}
    <button type="submit" class="primary" disabled=${busy}>Download</button>
  </form>`;
}

export function TransferPage(at) {
  // The import's outcome is shown once, in its form (not again as a page notice).
  return html`<${Page} title=${`Import and export · ${at.collection} · ${at.project} (${at.env})`}>
    <${CollectionNav} ...${at} current="transfer" />
    <${ImportForm} at=${at} />
    <${ExportForm} at=${at} />
  <//>`;
}
