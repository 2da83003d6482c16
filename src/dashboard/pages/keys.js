/**
 * A project's API keys: create, rotate (the new secret shown once), revoke, last use, and the
 * rules that limit what a key reaches (docs/keys.md), shown in short and edited as JSON.
 */
import { useState } from 'preact/hooks';
import { ErrorBox, Loading } from '../components/feedback.js';
import { Page } from '../components/page.js';
import { ProjectNav } from '../components/projectNav.js';
import { SecretDialog } from '../components/secretDialog.js';
import { keys } from '../lib/api.js';
import { formatTime } from '../lib/format.js';
import { useAction, useLoad } from '../lib/hooks.js';
import { html } from '../lib/html.js';
import { useSession } from '../lib/session.js';

const RULES_EXAMPLE = '[{"collections": ["posts"], "access": "read", "filter": {"published": true}}]';

/** Rules in short: `posts (read, filtered), public_* (write)`, or that there are none. */
function rulesSummary(rules) {
  if (rules === null) return 'every collection';
  if (rules.length === 0) return 'no collection';
  return rules
    .map((r) => `${r.collections.join(', ')} (${r.access}${r.filter ? ', filtered' : ''})`)
    .join('; ');
}

/** The rules as the textarea shows them: empty for none. */
const rulesText = (rules) => (rules === null ? '' : JSON.stringify(rules, null, 2));

function RulesField({ id, value, onInput }) {
  return html`<div class="field">
    <label for=${id}>Rules (JSON; empty: every collection)</label>
    <textarea id=${id} rows="4" class="mono" aria-describedby=${`${id}-hint`} placeholder=${RULES_EXAMPLE}
      value=${value} onInput=${(e) => onInput(e.currentTarget.value)}></textarea>
    <p class="hint" id=${`${id}-hint`}>Collections (names, or prefixes ending in *), read or write, and an
      optional filter on the documents: the key reaches nothing else. The first rule naming a collection decides.</p>
  </div>`;
}

function CreateKeyForm({ project, onCreated }) {
  const [name, setName] = useState('');
  const [env, setEnv] = useState('test');
  const [scope, setScope] = useState('read-write');
  const [rules, setRules] = useState('');
  const [, { busy, error, runJson }] = useAction();
  const submit = (event) => {
    event.preventDefault();
    runJson(rules.trim() || 'null', async (parsed) => {
      const { data } = await keys.create({ project, name: name.trim(), env, scope, rules: parsed });
      setName('');
      setRules('');
      onCreated(data);
    });
  };
  return html`<form class="card inline-form" onSubmit=${submit}>
    <h2>New API key</h2>
    <div class="row">
      <div class="field">
        <label for="key-name">Name</label>
        <input id="key-name" required maxlength="100" value=${name} onInput=${(e) => setName(e.currentTarget.value)} />
      </div>
      <div class="field">
        <label for="key-env">Environment</label>
        <select id="key-env" value=${env} onChange=${(e) => setEnv(e.currentTarget.value)}>
          <option value="test">test (development)</option>
          <option value="live">live (production)</option>
        </select>
      </div>
      <div class="field">
        <label for="key-scope">Scope</label>
        <select id="key-scope" value=${scope} aria-describedby="key-scope-hint" onChange=${(e) => setScope(e.currentTarget.value)}>
          <option value="read-write">read-write (servers)</option>
          <option value="read-only">read-only (browsers, apps)</option>
        </select>
      </div>
    </div>
    <p class="hint" id="key-scope-hint">Read-only keys may be used in front-end code; read-write keys are secrets for servers.</p>
    <${RulesField} id="key-rules" value=${rules} onInput=${setRules} />
    <${ErrorBox} error=${error} />
    <button type="submit" class="primary" disabled=${busy}>Create key</button>
  </form>`;
}

/** Change one key's rules; its secret stays the same. */
function RulesForm({ apiKey, onSaved, onCancel }) {
  const [text, setText] = useState(rulesText(apiKey.rules));
  const [, { busy, error, runJson }] = useAction();
  const save = (event) => {
    event.preventDefault();
    runJson(text.trim() || 'null', async (parsed) => {
      await keys.setRules(apiKey.id, parsed);
      onSaved(apiKey);
    });
  };
  return html`<form class="card" onSubmit=${save}>
    <h2>Rules of "${apiKey.name}" (<code>${apiKey.hint}</code>)</h2>
    <${RulesField} id="edit-rules" value=${text} onInput=${setText} />
    <${ErrorBox} error=${error} />
    <button type="submit" class="primary" disabled=${busy}>Save rules</button>
    <button type="button" onClick=${onCancel}>Cancel</button>
  </form>`;
}

function KeyRow({ apiKey, onRules, onRotate, onRevoke, busy }) {
  const active = apiKey.status === 'active';
  return html`<tr class=${active ? '' : 'muted'}>
    <th scope="row">${apiKey.name}</th>
    <td>${apiKey.env}</td>
    <td>${apiKey.scope}</td>
    <td>${rulesSummary(apiKey.rules)}</td>
    <td><code>${apiKey.hint}</code></td>
    <td>${apiKey.status}</td>
    <td><time datetime=${apiKey.createdAt}>${formatTime(apiKey.createdAt)}</time></td>
    <td>${apiKey.lastUsedAt ? html`<time datetime=${apiKey.lastUsedAt}>${formatTime(apiKey.lastUsedAt)}</time>` : 'never'}</td>
    <td class="actions">
      ${
        active
          ? html`<button type="button" disabled=${busy} aria-label=${`Edit the rules of key ${apiKey.name} (${apiKey.hint})`}
                onClick=${() => onRules(apiKey)}>Rules</button>
              <button type="button" disabled=${busy} aria-label=${`Rotate key ${apiKey.name} (${apiKey.hint})`}
                onClick=${() => onRotate(apiKey)}>Rotate</button>
              <button type="button" class="danger" disabled=${busy} aria-label=${`Revoke key ${apiKey.name} (${apiKey.hint})`}
                onClick=${() => onRevoke(apiKey)}>Revoke</button>`
          : null
      }
    </td>
  </tr>`;
}

export function KeysPage({ project }) {
  const { notify } = useSession();
  const list = useLoad(() => keys.list(project).then((r) => r.data.keys), [project]);
  const [secret, setSecret] = useState(null);
  const [editing, setEditing] = useState(null);
  const [run, { busy, error }] = useAction();

  const created = (data) => {
    setSecret({ title: `Key "${data.apiKey.name}" created`, rawKey: data.rawKey });
    list.reload();
  };
  const rotate = (apiKey) =>
    run(async () => {
      if (!window.confirm(`Rotate "${apiKey.name}"? Its current secret stops working at once.`)) return;
      const { data } = await keys.rotate(apiKey.id);
      setSecret({
        title: `Key "${apiKey.name}" rotated: the old secret no longer works`,
        rawKey: data.rawKey,
      });
      list.reload();
    });
  const rulesSaved = (apiKey) => {
    setEditing(null);
    notify(`Rules of "${apiKey.name}" saved.`);
    list.reload();
  };
  const revoke = (apiKey) =>
    run(async () => {
      if (!window.confirm(`Revoke "${apiKey.name}"? Requests with it will be refused from now on.`)) return;
      await keys.revoke(apiKey.id);
      notify(`Key "${apiKey.name}" revoked.`);
      list.reload();
    });

  return html`<${Page} title=${`API keys · ${project}`}>
    <${ProjectNav} project=${project} current="keys" />
    ${list.loading && !list.data ? html`<${Loading} what="keys" />` : null}
    <${ErrorBox} error=${list.error} />
    <${ErrorBox} error=${error} />
    ${
      list.data
        ? list.data.length === 0
          ? html`<p>This project has no key yet.</p>`
          : html`<table class="list">
              <caption class="sr-only">API keys of ${project}</caption>
              <thead><tr>
                <th scope="col">Name</th><th scope="col">Environment</th><th scope="col">Scope</th>
                <th scope="col">Reaches</th><th scope="col">Key</th><th scope="col">Status</th><th scope="col">Created</th>
                <th scope="col">Last used</th><th scope="col">Actions</th>
              </tr></thead>
              <tbody>
                ${list.data.map((k) => html`<${KeyRow} key=${k.id} apiKey=${k} busy=${busy} onRules=${setEditing} onRotate=${rotate} onRevoke=${revoke} />`)}
              </tbody>
            </table>`
        : null
    }
    ${
      editing
        ? html`<${RulesForm} key=${editing.id} apiKey=${editing} onSaved=${rulesSaved} onCancel=${() => setEditing(null)} />`
        : null
    }
    <${CreateKeyForm} project=${project} onCreated=${created} />
    <${SecretDialog}
      title=${secret?.title}
      secret=${secret?.rawKey}
      label="API key"
      explanation="Copy this key now and keep it safe: Folio stores only a hash and will never show it again."
      onClose=${() => setSecret(null)}
    />
  <//>`;
}
