/**
 * A collection's trash: deleted documents kept for the plan's retention, newest first, page by
 * page; each can be looked at (last version and history), restored, or erased for good.
 */
import { useState } from 'preact/hooks';
import { CollectionNav } from '../components/collectionNav.js';
import { ErrorBox, Loading } from '../components/feedback.js';
import { Page } from '../components/page.js';
import { Pager } from '../components/pager.js';
import { api, dataPath } from '../lib/api.js';
import { formatTime, pretty, preview, userFields } from '../lib/format.js';
import { useAction, useLoad } from '../lib/hooks.js';
import { html } from '../lib/html.js';
import { href } from '../lib/router.js';
import { useSession } from '../lib/session.js';

function trashPath(at, ...rest) {
  return dataPath(at.env, at.project, at.collection, '_trash', ...rest);
}

function Entry({ at, item, onChanged }) {
  const { notify } = useSession();
  const [open, setOpen] = useState(false);
  const [run, { busy, error, clear }] = useAction();
  const history = useLoad(
    () => (open ? api('GET', trashPath(at, item._id)).then((r) => r.data.versions) : Promise.resolve(null)),
    [open],
  );
  const restore = () =>
    run(async () => {
      const { data } = await api('POST', trashPath(at, item._id, 'restore'));
      notify(`Restored ${item._id} as version ${data.$version}.`);
      onChanged();
    });
  const erase = () => {
    if (!window.confirm(`Erase ${item._id} and its whole history for good? This cannot be undone.`)) return;
    run(async () => {
      await api('DELETE', trashPath(at, item._id));
      notify(`Erased ${item._id}.`);
      onChanged();
    });
  };
  return html`<li class="card trash-entry">
    <h3 class="mono">${item._id}</h3>
    <p>
      Deleted ${formatTime(item.deletedAt)} by <code>${item.deletedBy}</code>; version ${item.version};
      erased for good ${formatTime(item.expiresAt)}.
    </p>
    <p class="mono">${preview(userFields(item.document))}</p>
    <div class="actions">
      <button type="button" onClick=${restore} disabled=${busy}>Restore</button>
      <button type="button" class="danger" onClick=${erase} disabled=${busy}>Erase for good</button>
      <button type="button" class="link" aria-expanded=${open} onClick=${() => setOpen(!open)}>
        ${open ? 'Hide' : 'Show'} last version and history
      </button>
    </div>
    <${ErrorBox} error=${error} onDismiss=${clear} />
    ${
      open
        ? html`<pre class="json">${pretty(item.document)}</pre>
          ${history.loading ? html`<${Loading} what="history" />` : null}
          <${ErrorBox} error=${history.error} />
          ${
            history.data
              ? html`<ol class="versions" aria-label="History, newest first">
                ${history.data.map(
                  (v) =>
                    html`<li>v${v.version} ${v.operation} ${formatTime(v.timestamp)} <code>${v.apiKeyHint}</code></li>`,
                )}
              </ol>`
              : null
          }`
        : null
    }
  </li>`;
}

export function TrashPage({ project, env, collection }) {
  const at = { project, env, collection };
  const [cursors, setCursors] = useState([null]);
  const cursor = cursors[cursors.length - 1];
  const page = useLoad(
    () =>
      api('GET', `${trashPath(at)}${cursor ? `?after=${encodeURIComponent(cursor)}` : ''}`).then(
        (r) => r.data,
      ),
    [cursor],
  );
  return html`<${Page} title=${`${collection}: trash`}>
    <${CollectionNav} project=${project} env=${env} collection=${collection} current="trash" />
    <p>
      Deleted documents stay here, with their history, for your plan's retention
      (<a href=${href('plan')}>see the plans</a>), then they are erased for good.
    </p>
    ${page.loading ? html`<${Loading} what="the trash" />` : null}
    <${ErrorBox} error=${page.error} />
    ${
      page.data
        ? html`${
            page.data.data.length === 0
              ? html`<p class="empty">The trash is empty.</p>`
              : html`<ul class="trash" aria-label="Deleted documents, newest first">
                ${page.data.data.map((item) => html`<${Entry} key=${item._id} at=${at} item=${item} onChanged=${page.reload} />`)}
              </ul>`
          }
          <${Pager} cursors=${cursors} onChange=${setCursors} meta=${page.data.meta} back="Newer" more="Older" />`
        : null
    }
  <//>`;
}
