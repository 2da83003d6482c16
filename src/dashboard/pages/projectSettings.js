/** Which browser origins may use the project's API keys (CORS policy), and automatic indexes. */
import { useState } from 'preact/hooks';
import { ErrorBox, Loading } from '../components/feedback.js';
import { Page } from '../components/page.js';
import { ProjectNav } from '../components/projectNav.js';
import { projects } from '../lib/api.js';
import { useAction } from '../lib/hooks.js';
import { html } from '../lib/html.js';
import { useProject } from '../lib/projects.js';
import { useSession } from '../lib/session.js';

function OriginsForm({ project, onSaved }) {
  const [custom, setCustom] = useState(project.allowedOrigins !== null);
  const [text, setText] = useState((project.allowedOrigins ?? []).join('\n'));
  const [run, { busy, error }] = useAction();
  const save = (event) => {
    event.preventDefault();
    run(async () => {
      const list = custom
        ? text
            .split('\n')
            .map((line) => line.trim())
            .filter(Boolean)
        : null;
      await projects.setOrigins(project.id, list);
      onSaved();
    });
  };
  return html`<form class="card" onSubmit=${save}>
    <h2>Browser origins</h2>
    <p>Pages on other sites calling the data API with this project's keys. By default, any page
      may use read-only keys and no page may use read-write keys (they are secrets).</p>
    <fieldset>
      <legend>Policy</legend>
      <label class="choice"><input type="radio" name="policy" checked=${!custom} onChange=${() => setCustom(false)} />
        Default: read-only keys from any origin, read-write keys from none</label>
      <label class="choice"><input type="radio" name="policy" checked=${custom} onChange=${() => setCustom(true)} />
        Only the origins listed below, for every key</label>
    </fieldset>
    <div class="field">
      <label for="origins">Allowed origins, one per line</label>
      <textarea id="origins" rows="4" disabled=${!custom} aria-describedby="origins-hint" class="mono"
        value=${text} onInput=${(e) => setText(e.currentTarget.value)}></textarea>
      <p class="hint" id="origins-hint">Scheme, host and port, such as https://app.example or http://localhost:5173; * allows any.</p>
    </div>
    <${ErrorBox} error=${error} />
    <button type="submit" class="primary" disabled=${busy}>Save allowed origins</button>
  </form>`;
}

const AUTO_INDEX_CHOICES = [
  [null, 'The server’s default'],
  [true, 'On: build single-field indexes for fields queried often'],
  [false, 'Off: only the indexes declared on each collection'],
];

function AutoIndexesForm({ project, onSaved }) {
  const [choice, setChoice] = useState(project.autoIndexes ?? null);
  const [run, { busy, error }] = useAction();
  const save = (event) => {
    event.preventDefault();
    run(async () => {
      await projects.setAutoIndexes(project.id, choice);
      onSaved();
    });
  };
  return html`<form class="card" onSubmit=${save}>
    <h2>Automatic indexes</h2>
    <p>On a large collection, a field filtered or sorted on often gets a single-field index built
      in the background, listed as automatic and dropped when no query has used it for a while.</p>
    <fieldset>
      <legend>Automatic indexes</legend>
      ${AUTO_INDEX_CHOICES.map(
        ([value, label]) =>
          html`<label class="choice"><input type="radio" name="autoIndexes" checked=${choice === value}
            onChange=${() => setChoice(value)} /> ${label}</label>`,
      )}
    </fieldset>
    <${ErrorBox} error=${error} />
    <button type="submit" class="primary" disabled=${busy}>Save automatic indexes</button>
  </form>`;
}

export function ProjectSettingsPage({ project }) {
  const { notify } = useSession();
  const loaded = useProject(project);
  const data = loaded.data;
  return html`<${Page} title=${`Settings · ${project}`}>
    <${ProjectNav} project=${project} current="settings" />
    ${loaded.loading && !data ? html`<${Loading} what="the project" />` : null}
    <${ErrorBox} error=${loaded.error} />
    ${
      data
        ? html`<${OriginsForm} key=${`${data.id}:${JSON.stringify(data.allowedOrigins)}`} project=${data}
            onSaved=${() => {
              notify('Allowed origins saved.');
              loaded.reload();
            }} />
          <${AutoIndexesForm} key=${`${data.id}:auto:${String(data.autoIndexes)}`} project=${data}
            onSaved=${() => {
              notify('Automatic indexes saved.');
              loaded.reload();
            }} />
          <p class="hint">Project id: <code>${data.id}</code></p>`
        : null
    }
  <//>`;
}
