/**
 * Type tests of client/folio.d.ts, checked by `tsc` (`npm run typecheck`), never run: the calls
 * an application may make compile, and each `@ts-expect-error` marks one that must not (tsc
 * fails if such a line compiles).
 */
import {
  type BulkOperation,
  type ChangeEvent,
  type Collection,
  createClient,
  FolioError,
  type Page,
  type Stored,
} from '../../client/folio.js';

interface Post {
  title: string;
  stars: number;
  tags?: string[];
}

export async function allowed(posts: Collection<Post>): Promise<void> {
  const folio = createClient({ baseUrl: 'http://localhost:3000', key: 'folio_sk_test_x' });
  createClient({ baseUrl: 'http://localhost:3000', retry: false });
  createClient({ baseUrl: 'http://localhost:3000', retry: { attempts: 5, maxWaitMs: 2000, writes: true } });
  const typed: Collection<Post> = folio.project('blog').collection<Post>('posts');
  const untyped = folio.project('blog').collection('anything');
  await untyped.create({ whatever: [1, 2] });

  const created: Stored<Post> = await typed.create({ title: 'a', stars: 1 });
  const version: number = created.$version;
  await posts.create({ _id: 'fixed', title: 'b', stars: 2 }, { retry: true });
  await posts.get(created._id);
  await posts.replace(created._id, { title: 'c', stars: 3 }, { ifVersion: version });
  await posts.patch(created._id, { stars: 4, tags: null });
  await posts.patch(created._id, { stars: 5 }, { ifVersion: '*' });
  await posts.jsonPatch(created._id, [{ op: 'replace', path: '/stars', value: 6 }]);
  await posts.delete(created._id, { ifVersion: 6, purge: true });

  // Every operator; `in` as an array (or one value), nested fields in dot notation.
  const page: Page<Stored<Post>> = await posts.list({
    filter: {
      title: 'a',
      stars: { gte: 1, lte: 5, gt: 0, lt: 6, neq: 3, eq: 2 },
      tags: { in: ['x', 'y'], exists: true, contains: 'x' },
      'meta.kind': { in: 'one' },
    },
    sort: ['-stars', 'title'],
    limit: 10,
    total: 'estimate',
  });
  const stars: number = page.data[0]?.stars ?? 0;
  const next = page.meta.next;
  if (next) await posts.list({ after: next, sort: '-stars' });
  await posts.list({ offset: 20 });
  const selected = await posts.list({ select: ['title'] });
  const title: string | undefined = selected.data[0]?.title;
  const withVersion = await posts.list({ select: ['title', '$version'] });
  const selectedVersion: number | undefined = withVersion.data[0]?.$version;
  const count: number = await posts.count({ filter: { stars: { in: [1, 2] } } });
  for await (const post of posts.iterate({ filter: { stars: { gte: 1 } }, limit: 100 }))
    post.title.toUpperCase();

  const history = await posts.versions(created._id);
  history[0]?.operation satisfies 'create' | 'update' | 'patch' | 'restore' | undefined;
  await posts.version(created._id, 1);
  const diff = await posts.diff(created._id, 1, 2);
  diff.changes[0]?.type satisfies 'changed' | 'added' | 'removed' | undefined;
  await posts.restore(created._id, 1, { ifVersion: 2 });
  const operations: BulkOperation<Post>[] = [
    { method: 'POST', body: { title: 'd', stars: 0 } },
    { method: 'PUT', id: 'x', body: { title: 'e', stars: 0 } },
    { method: 'PATCH', id: 'x', body: { stars: 1 } },
    { method: 'DELETE', id: 'x' },
  ];
  const bulk = await posts.bulk(operations);
  bulk.summary.failed satisfies number;
  await posts.import([{ title: 'f', stars: 0 }], { onConflict: 'skip' });
  await posts.import('_id,title\n1,g\n', { format: 'csv', idField: '_id' });
  const stream: ReadableStream<Uint8Array> = await posts.export({ format: 'ndjson', filter: { stars: 1 } });
  await posts.export({ format: 'csv', formulaEscape: false, sort: 'title' });

  const stop: () => void = posts.subscribe(
    { events: ['created', 'deleted'], filter: { stars: { gte: 3 } } },
    (event: ChangeEvent<Post>) =>
      event.event === 'document.removed' ? event.document._id : event.document.title.toUpperCase(),
    { onReset: (info) => info.reason, onError: (error) => error.status },
  );
  posts.subscribe(
    {},
    (event) => event.event satisfies `document.${'created' | 'updated' | 'deleted' | 'removed'}`,
  );
  // A removed document's content is not sent: narrow on `event` first.
  // @ts-expect-error
  posts.subscribe({}, (event) => event.document.title);
  stop();

  try {
    await posts.get('missing');
  } catch (error) {
    if (error instanceof FolioError) {
      error.status satisfies number;
      error.code satisfies string;
      error.requestId satisfies string | null;
      error.details satisfies Record<string, unknown> | undefined;
    }
  }
  void [stars, title, selectedVersion, count, stream];
}

export async function forbidden(posts: Collection<Post>): Promise<void> {
  // @ts-expect-error baseUrl is required
  createClient({ key: 'k' });
  // @ts-expect-error a field of the wrong type
  await posts.create({ title: 'a', stars: 'many' });
  // @ts-expect-error a required field missing
  await posts.replace('id', { title: 'a' });
  // @ts-expect-error a merge patch sets fields with their own types
  await posts.patch('id', { stars: 'x' });
  // @ts-expect-error a JSON patch is a list of operations
  await posts.jsonPatch('id', { op: 'replace', path: '/stars', value: 1 });
  // @ts-expect-error an operation JSON Patch does not have
  await posts.jsonPatch('id', [{ op: 'rename', path: '/stars' }]);
  // @ts-expect-error ifVersion is a version number or '*'
  await posts.delete('id', { ifVersion: 'latest' });
  // @ts-expect-error an operator the server does not know
  await posts.list({ filter: { title: { near: 'a' } } });
  // @ts-expect-error a filter value is a string, number or boolean
  await posts.list({ filter: { title: { eq: { nested: true } } } });
  // @ts-expect-error select names the document's fields
  await posts.list({ select: ['author'] });
  const selected = await posts.list({ select: ['title'] });
  // @ts-expect-error a field not selected is not in the answer
  selected.data[0]?.stars;
  // @ts-expect-error total is exact, estimate or none
  await posts.list({ total: 'some' });
  // @ts-expect-error iterate pages through the cursor, not offsets
  posts.iterate({ offset: 10 });
  // @ts-expect-error a version is a number
  await posts.version('id', 'v1');
  // @ts-expect-error bulk PUT needs the id
  await posts.bulk([{ method: 'PUT', body: { title: 'a', stars: 1 } }]);
  // @ts-expect-error a bulk operation has one of four methods
  await posts.bulk([{ method: 'GET', id: 'x' }]);
  // @ts-expect-error an import format Folio does not read
  await posts.import('x', { format: 'xml' });
  // @ts-expect-error onConflict is fail, skip or overwrite
  await posts.import([], { onConflict: 'merge' });
  // @ts-expect-error event types are created, updated and deleted
  posts.subscribe({ events: ['changed'] }, () => {});
  posts.subscribe({}, (event) => {
    // @ts-expect-error the document has the collection's fields
    event.document.author;
  });
}
