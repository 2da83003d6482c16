/**
 * The dashboard's files, read once at start into memory: the browser modules under
 * `src/dashboard/` and the vendor modules (preact, its hooks, htm, eventsource-parser) from
 * node_modules.
 * Requests are answered by exact look-up in this table, so no request path ever reaches the file
 * system: `..`, encoded dots or absolute paths simply find nothing.
 */
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, extname, join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface Asset {
  body: Buffer;
  type: string;
  /** Strong validator: a hash of the content. */
  etag: string;
}

export interface DashboardAssets {
  /** By path below `/dashboard/` (`index.html`, `pages/keys.js`, `vendor/preact.mjs`). */
  files: ReadonlyMap<string, Asset>;
  /** The Content-Security-Policy of the dashboard's pages (the import map's hash included). */
  contentSecurityPolicy: string;
}

/**
 * `src/dashboard/` of the checkout, found from this module both when it runs from `src/` (npm start)
 * and when it was compiled to `dist/src/` (npm run build): the browser files are never compiled.
 */
function clientDir(): string {
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, 'src', 'dashboard');
    if (existsSync(join(candidate, 'index.html'))) return candidate;
    const parent = dirname(dir);
    if (parent === dir) throw new Error('cannot find the dashboard files (src/dashboard/index.html)');
    dir = parent;
  }
}

const CONTENT_TYPES: ReadonlyMap<string, string> = new Map([
  ['.html', 'text/html; charset=utf-8'],
  ['.js', 'text/javascript; charset=utf-8'],
  ['.mjs', 'text/javascript; charset=utf-8'],
  ['.css', 'text/css; charset=utf-8'],
  ['.svg', 'image/svg+xml'],
  ['.png', 'image/png'],
  ['.json', 'application/json; charset=utf-8'],
]);

/** Browser modules taken from npm packages as published (ES modules; the import map names them). */
export const VENDOR_MODULES = [
  { path: 'vendor/preact.mjs', pkg: 'preact', file: 'dist/preact.mjs' },
  { path: 'vendor/preact-hooks.mjs', pkg: 'preact', file: 'hooks/dist/hooks.mjs' },
  { path: 'vendor/htm.mjs', pkg: 'htm', file: 'dist/htm.module.js' },
  { path: 'vendor/eventsource-parser.mjs', pkg: 'eventsource-parser', file: 'dist/index.js' },
] as const;

const require = createRequire(import.meta.url);

/** The installed package's folder (its entry point, then up to the package.json naming it). */
function packageDir(name: string): string {
  let dir = dirname(require.resolve(name));
  for (;;) {
    try {
      const manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name?: unknown };
      if (manifest.name === name) return dir;
    } catch {
      // No package.json here: keep climbing.
    }
    const parent = dirname(dir);
    if (parent === dir) throw new Error(`cannot find the folder of the installed package ${name}`);
    dir = parent;
  }
}

export function asset(body: Buffer, type: string): Asset {
  const hash = createHash('sha256').update(body).digest('base64url').slice(0, 27);
  return { body, type, etag: `"${hash}"` };
}

/**
 * Every servable file of `dir` and its folders (one level: the routes are `/dashboard/:file` and
 * `/dashboard/:folder/:file`); dot files and unknown types are left out.
 */
function clientFiles(dir: string): Map<string, Asset> {
  const files = new Map<string, Asset>();
  const pending = [{ path: dir, depth: 0 }];
  while (pending.length > 0) {
    const current = pending.pop() as { path: string; depth: number };
    for (const entry of readdirSync(current.path, { withFileTypes: true })) {
      if (entry.name.startsWith('.')) continue;
      const full = join(current.path, entry.name);
      if (entry.isDirectory()) {
        if (current.depth >= 1) throw new Error(`dashboard files nest one folder deep at most: ${full}`);
        pending.push({ path: full, depth: current.depth + 1 });
      }
      const type = CONTENT_TYPES.get(extname(entry.name));
      if (entry.isFile() && type)
        files.set(relative(dir, full).split(sep).join('/'), asset(readFileSync(full), type));
    }
  }
  return files;
}

/** The inline import map is the page's only inline script; the policy allows exactly it by hash. */
function policyFor(indexHtml: string): string {
  const match = /<script type="importmap">([\s\S]*?)<\/script>/.exec(indexHtml);
  if (!match) throw new Error('src/dashboard/index.html has no import map');
  const hash = createHash('sha256')
    .update(match[1] as string)
    .digest('base64');
  return [
    "default-src 'none'",
    `script-src 'self' 'sha256-${hash}'`,
    "style-src 'self'",
    "img-src 'self' data:",
    "connect-src 'self'",
    "form-action 'self'",
    "base-uri 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

export function loadDashboardAssets(dir: string = clientDir()): DashboardAssets {
  const files = clientFiles(dir);
  for (const vendor of VENDOR_MODULES) {
    const body = readFileSync(join(packageDir(vendor.pkg), vendor.file));
    files.set(vendor.path, asset(body, 'text/javascript; charset=utf-8'));
  }
  const index = files.get('index.html');
  if (!index) throw new Error(`the dashboard has no index.html in ${dir}`);
  return { files, contentSecurityPolicy: policyFor(index.body.toString('utf8')) };
}
