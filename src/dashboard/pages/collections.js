/** The collections of a project environment with their document counts. */
import { useState } from 'preact/hooks';
import { ErrorBox, Loading } from '../components/feedback.js';
import { Page } from '../components/page.js';
import { ProjectNav } from '../components/projectNav.js';
import { projects } from '../lib/api.js';
import { formatNumber } from '../lib/format.js';
import { useLoad } from '../lib/hooks.js';
import { html } from '../lib/html.js';
import { useProject } from '../lib/projects.js';
import { href, navigate } from '../lib/router.js';

const COLLECTION_NAME = '^[A-Za-z0-9][A-Za-z0-9_\\-]{0,63}$';

export function CollectionsPage({ project, env }) {
  const loaded = useProject(project);
  const id = loaded.data?.id;
  const list = useLoad(
    () => (id ? projects.collections(id, env).then((r) => r.data.collections) : Promise.resolve(undefined)),
    [id, env],
  );
  const [name, setName] = useState('');
  const open = (event) => {
    event.preventDefault();
    navigate(href('p', project, env, 'c', name.trim()));
  };

  return html`<${Page} title=${`Collections · ${project} (${env})`}>
    <${ProjectNav} project=${project} current=${env} />
    <${ErrorBox} error=${loaded.error ?? list.error} />
    ${(loaded.loading || list.loading) && !list.data ? html`<${Loading} what="collections" />` : null}
    ${
      list.data
        ? list.data.length === 0
          ? html`<p>No collection in the ${env} environment holds documents yet. A collection is created by
              its first document: write one with a ${env} key, or open a collection by name below.</p>`
          : html`<table class="list">
              <caption class="sr-only">Collections of ${project} in ${env}</caption>
              <thead><tr><th scope="col">Collection</th><th scope="col" class="num">Documents</th></tr></thead>
              <tbody>
                ${list.data.map(
                  (c) => html`<tr>
                    <th scope="row"><a href=${href('p', project, env, 'c', c.name)}>${c.name}</a></th>
                    <td class="num">${formatNumber(c.documents)}</td>
                  </tr>`,
                )}
              </tbody>
            </table>`
        : null
    }
    <form class="card inline-form" onSubmit=${open}>
      <h2>Open a collection</h2>
      <div class="field">
        <label for="collection-name">Collection name</label>
        <input id="collection-name" required pattern=${COLLECTION_NAME} maxlength="64" value=${name}
          aria-describedby="collection-name-hint" onInput=${(e) => setName(e.currentTarget.value)} />
        <p class="hint" id="collection-name-hint">Letters, digits, _ or -, starting with a letter or digit. An empty collection can be opened to add its first document.</p>
      </div>
      <button type="submit">Open</button>
    </form>
  <//>`;
}
