/** A project's API keys: create, rotate (the new secret shown once), revoke, last use. */
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

function CreateKeyForm({ project, onCreated }) {
  const [name, setName] = useState('');
  const [env, setEnv] = useState('test');
  const [scope, setScope] = useState('read-write');
  const [run, { busy, error }] = useAction();
  const submit = (event) => {
    event.preventDefault();
    run(async () => {
      const { data } = await keys.create({ project, name: name.trim(), env, scope });
      setName('');
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
    <${ErrorBox} error=${error} />
    <button type="submit" class="primary" disabled=${busy}>Create key</button>
  </form>`;
}

function KeyRow({ apiKey, onRotate, onRevoke, busy }) {
  const active = apiKey.status === 'active';
  return html`<tr class=${active ? '' : 'muted'}>
    <th scope="row">${apiKey.name}</th>
    <td>${apiKey.env}</td>
    <td>${apiKey.scope}</td>
    <td><code>${apiKey.hint}</code></td>
    <td>${apiKey.status}</td>
    <td><time datetime=${apiKey.createdAt}>${formatTime(apiKey.createdAt)}</time></td>
    <td>${apiKey.lastUsedAt ? html`<time datetime=${apiKey.lastUsedAt}>${formatTime(apiKey.lastUsedAt)}</time>` : 'never'}</td>
    <td class="actions">
      ${
        active
          ? html`<button type="button" disabled=${busy} aria-label=${`Rotate key ${apiKey.name} (${apiKey.hint})`}
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
                <th scope="col">Key</th><th scope="col">Status</th><th scope="col">Created</th>
                <th scope="col">Last used</th><th scope="col">Actions</th>
              </tr></thead>
              <tbody>
                ${list.data.map((k) => html`<${KeyRow} key=${k.id} apiKey=${k} busy=${busy} onRotate=${rotate} onRevoke=${revoke} />`)}
              </tbody>
            </table>`
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
