/**
 * The client library (client/*.js) served beside the dashboard's files as
 * `/dashboard/client/<file>`, so a page on any origin imports it by URL with no build step
 * (docs/client.md). Read once at start, like the dashboard's files; its `.d.ts` types are for
 * TypeScript projects, which take them from the repository.
 */
import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Asset, asset, type DashboardAssets } from './assets.js';

/** The library's modules: folio.js imports the other two. */
export const CLIENT_LIBRARY_FILES = ['folio.js', 'http.js', 'changes.js'] as const;

/** `client/` of the checkout, from `src/` (npm start) or `dist/src/` (npm run build). */
function libraryDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, 'client');
    if (existsSync(join(candidate, 'folio.js'))) return candidate;
    const parent = dirname(dir);
    if (parent === dir) throw new Error('cannot find the client library (client/folio.js)');
    dir = parent;
  }
}

/** The dashboard's files and the library's, by path below `/dashboard/`. */
export function withClientLibrary(assets: DashboardAssets): DashboardAssets {
  const dir = libraryDir();
  const files = new Map<string, Asset>(assets.files);
  for (const file of CLIENT_LIBRARY_FILES)
    files.set(`client/${file}`, asset(readFileSync(join(dir, file)), 'text/javascript; charset=utf-8'));
  return { ...assets, files };
}
