/** The account's projects, and a form to create one. */
import { useState } from 'preact/hooks';
import { ErrorBox, Loading } from '../components/feedback.js';
import { Page } from '../components/page.js';
import { projects } from '../lib/api.js';
import { formatTime } from '../lib/format.js';
import { useAction, useLoad } from '../lib/hooks.js';
import { html } from '../lib/html.js';
import { href } from '../lib/router.js';
import { useSession } from '../lib/session.js';

export function ProjectsPage() {
  const { notify } = useSession();
  const list = useLoad(() => projects.list().then((r) => r.data.projects), []);
  const [name, setName] = useState('');
  const [run, { busy, error }] = useAction();

  const create = (event) => {
    event.preventDefault();
    run(async () => {
      const { data } = await projects.create(name.trim());
      setName('');
      notify(`Project ${data.name} created.`);
      list.reload();
    });
  };

  return html`<${Page} title="Projects">
    ${list.loading && !list.data ? html`<${Loading} what="projects" />` : null}
    <${ErrorBox} error=${list.error} />
    ${
      list.data && list.data.length === 0
        ? html`<p>You have no project yet. Create one below; its name is the first part of every data URL.</p>`
        : null
    }
    ${
      list.data && list.data.length > 0
        ? html`<table class="list">
            <caption class="sr-only">Your projects</caption>
            <thead><tr><th scope="col">Project</th><th scope="col">Created</th><th scope="col">Open</th></tr></thead>
            <tbody>
              ${list.data.map(
                (p) => html`<tr>
                  <th scope="row"><a href=${href('p', p.name, 'test')}>${p.name}</a></th>
                  <td><time datetime=${p.createdAt}>${formatTime(p.createdAt)}</time></td>
                  <td class="actions">
                    <a href=${href('p', p.name, 'test')} aria-label=${`Test data of ${p.name}`}>Test data</a>
                    <a href=${href('p', p.name, 'live')} aria-label=${`Live data of ${p.name}`}>Live data</a>
                    <a href=${href('p', p.name, 'keys')} aria-label=${`API keys of ${p.name}`}>API keys</a>
                  </td>
                </tr>`,
              )}
            </tbody>
          </table>`
        : null
    }
    <form class="card inline-form" onSubmit=${create}>
      <h2>New project</h2>
      <div class="field">
        <label for="project-name">Project name</label>
        <input id="project-name" required maxlength="64" value=${name} aria-describedby="project-name-hint"
          onInput=${(e) => setName(e.currentTarget.value)} />
        <p class="hint" id="project-name-hint">1–64 letters, digits, _ or -, starting with a letter or digit.</p>
      </div>
      <${ErrorBox} error=${error} />
      <button type="submit" class="primary" disabled=${busy}>Create project</button>
    </form>
  <//>`;
}
