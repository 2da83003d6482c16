/** The account's plan, every plan's limits side by side, and a plan change. */
import { ErrorBox, Loading } from '../components/feedback.js';
import { Page } from '../components/page.js';
import { plans } from '../lib/api.js';
import { formatBytes, formatNumber } from '../lib/format.js';
import { useAction, useLoad } from '../lib/hooks.js';
import { html } from '../lib/html.js';
import { useSession } from '../lib/session.js';

const LIMITS = new Map([
  ['requestsPerSecond', 'Requests per second, per key'],
  ['activeKeys', 'Active API keys per project'],
  ['maxFilters', 'Filters per query'],
  ['maxPageSize', 'Documents per page (limit)'],
  ['maxOffset', 'Largest offset'],
  ['maxBulkOperations', 'Operations per bulk request'],
  ['maxImportBytes', 'Import size'],
  ['maxImportDocuments', 'Documents per import'],
  ['maxExportDocuments', 'Documents per export'],
  ['webhookRetries', 'Webhook retries'],
  ['maxWebhooks', 'Webhooks per collection'],
  ['maxIndexes', 'Declared indexes per collection'],
  ['changeStreams', 'Change streams (live view)'],
  ['versionDiff', 'Version diff'],
  ['storedVersions', 'Stored versions per document'],
  ['trashRetentionDays', 'Days deleted documents stay in the trash'],
  ['schemaChangesPerMinute', 'Collection schema changes per minute, per project'],
]);

/** A limit this page has no name for yet, in words rather than as its key (`maxFooBar` → "Foo bar"). */
export function limitName(key) {
  if (LIMITS.has(key)) return LIMITS.get(key);
  const words = key
    .replace(/^max(?=[A-Z])/, '')
    .replace(/([a-z0-9])([A-Z])/g, '$1 $2')
    .toLowerCase();
  return words.charAt(0).toUpperCase() + words.slice(1);
}

const PLAN_NAMES = new Map([
  ['free', 'Free'],
  ['pro', 'Pro'],
  ['team', 'Team'],
]);

function cell(name, value) {
  if (typeof value === 'boolean') return value ? 'yes' : 'no';
  if (name === 'maxImportBytes') return formatBytes(value);
  return formatNumber(value);
}

export function PlanPage() {
  const { account, setAccount, notify } = useSession();
  const list = useLoad(() => plans.list().then((r) => r.data.plans), []);
  const [run, { busy, error }] = useAction();

  const change = (plan) =>
    run(async () => {
      const { data } = await plans.change(plan);
      setAccount(data);
      notify(`You are now on the ${PLAN_NAMES.get(plan) ?? plan} plan.`);
    });

  const names = list.data ? Object.keys(list.data) : [];
  const limitNames = list.data ? Object.keys(list.data[names[0]] ?? {}) : [];

  return html`<${Page} title="Plan and limits">
    <p>You are on the <strong>${PLAN_NAMES.get(account.plan) ?? account.plan}</strong> plan.
      Folio is in a free pre-release phase: you can change plans at any time.</p>
    ${list.loading && !list.data ? html`<${Loading} what="plans" />` : null}
    <${ErrorBox} error=${list.error} />
    <${ErrorBox} error=${error} />
    ${
      list.data
        ? html`<table class="list plans">
            <caption>Limits of each plan</caption>
            <thead><tr>
              <th scope="col">Limit</th>
              ${names.map(
                (plan) =>
                  html`<th scope="col" class=${plan === account.plan ? 'current' : ''}>
                    ${PLAN_NAMES.get(plan) ?? plan}${plan === account.plan ? html` <span class="tag">your plan</span>` : null}
                  </th>`,
              )}
            </tr></thead>
            <tbody>
              ${limitNames.map(
                (limit) => html`<tr>
                  <th scope="row">${limitName(limit)}</th>
                  ${names.map((plan) => html`<td class=${plan === account.plan ? 'current' : ''}>${cell(limit, list.data[plan][limit])}</td>`)}
                </tr>`,
              )}
            </tbody>
            <tfoot><tr>
              <td></td>
              ${names.map(
                (plan) => html`<td>
                  ${
                    plan === account.plan
                      ? html`<span class="tag">current</span>`
                      : html`<button type="button" disabled=${busy} onClick=${() => change(plan)}>
                          Switch to ${PLAN_NAMES.get(plan) ?? plan}
                        </button>`
                  }
                </td>`,
              )}
            </tr></tfoot>
          </table>`
        : null
    }
  <//>`;
}
