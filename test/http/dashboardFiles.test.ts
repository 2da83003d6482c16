/**
 * `/dashboard/...`: the dashboard's files served from memory: right types, validators and
 * caching headers, a strict Content-Security-Policy, vendor modules exactly as npm ships them,
 * and no way out of the table (raw `..` paths, encoded or not, are 404).
 */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { request as httpRequest } from 'node:http';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { expect } from 'chai';
import { loadDashboardAssets, VENDOR_MODULES } from '../../src/http/dashboard/assets.js';
import { startTestServer, type TestServer } from '../support/server.js';

/**
 * A GET with the path and headers sent exactly as given: fetch would normalise `..` away, and adds
 * `Cache-Control: no-cache` to conditional requests (as the Fetch standard says), which forbids a 304.
 */
function rawGet(
  base: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string; type: string }> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: url.hostname, port: url.port, path, method: 'GET', headers }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        body += chunk;
      });
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body, type: res.headers['content-type'] ?? '' }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

describe('dashboard files', () => {
  let server: TestServer;
  before(async () => {
    server = await startTestServer();
  });
  after(async () => {
    await server?.close();
  });

  it('/dashboard redirects to /dashboard/, which is the page with a strict CSP and no framing', async () => {
    const redirect = await fetch(`${server.url}/dashboard`, { redirect: 'manual' });
    expect(redirect.status).to.equal(308);
    expect(redirect.headers.get('location')).to.equal('/dashboard/');
    const page = await fetch(`${server.url}/dashboard/`);
    expect(page.status).to.equal(200);
    expect(page.headers.get('content-type')).to.equal('text/html; charset=utf-8');
    const csp = page.headers.get('content-security-policy') ?? '';
    expect(csp).to.include("default-src 'none'");
    expect(csp).to.include("frame-ancestors 'none'");
    expect(csp).to.not.include('unsafe-inline');
    expect(page.headers.get('x-frame-options')).to.equal('DENY');
    expect(page.headers.get('x-content-type-options')).to.equal('nosniff');
    // The one inline script (the import map) is allowed by its exact hash, nothing else.
    const html = await page.text();
    const inline = /<script type="importmap">([\s\S]*?)<\/script>/.exec(html)?.[1] ?? '';
    const hash = createHash('sha256').update(inline).digest('base64');
    expect(csp).to.include(`script-src 'self' 'sha256-${hash}'`);
    expect(html.match(/<script(?![^>]*\bsrc=)(?![^>]*importmap)[^>]*>/g)).to.equal(null);
  });

  it('serves modules, styles and images with their types, a strong ETag and Cache-Control: no-cache; 304 on a match', async () => {
    for (const [path, type] of [
      ['app.js', 'text/javascript; charset=utf-8'],
      ['styles.css', 'text/css; charset=utf-8'],
      ['favicon.svg', 'image/svg+xml'],
      ['vendor/preact.mjs', 'text/javascript; charset=utf-8'],
    ]) {
      const res = await fetch(`${server.url}/dashboard/${path}`);
      expect(res.status, path).to.equal(200);
      expect(res.headers.get('content-type'), path).to.equal(type);
      expect(res.headers.get('cache-control')).to.equal('no-cache');
      const etag = res.headers.get('etag') ?? '';
      expect(etag).to.match(/^"[A-Za-z0-9_-]{27}"$/);
      const again = await rawGet(server.url, `/dashboard/${path}`, { 'If-None-Match': etag });
      expect(again.status, path).to.equal(304);
      expect(again.body).to.equal('');
      const changed = await rawGet(server.url, `/dashboard/${path}`, { 'If-None-Match': '"other"' });
      expect(changed.status).to.equal(200);
      // A reload (Cache-Control: no-cache) always gets the file.
      const reload = await rawGet(server.url, `/dashboard/${path}`, {
        'If-None-Match': etag,
        'Cache-Control': 'no-cache',
      });
      expect(reload.status).to.equal(200);
    }
  });

  it('serves the vendor modules byte for byte as installed from npm', async () => {
    const require = createRequire(import.meta.url);
    for (const vendor of VENDOR_MODULES) {
      const entry = require.resolve(vendor.pkg);
      let dir = dirname(entry);
      while (
        !(await readFile(join(dir, 'package.json'), 'utf8').catch(() => '')).includes(
          `"name": "${vendor.pkg}"`,
        )
      )
        dir = dirname(dir);
      const expected = await readFile(join(dir, vendor.file));
      const res = await fetch(`${server.url}/dashboard/${vendor.path}`);
      expect(Buffer.from(await res.arrayBuffer()).equals(expected), vendor.path).to.equal(true);
    }
  });

  it('every module import of the page resolves to a served file (import map included)', async () => {
    const assets = loadDashboardAssets();
    const html = assets.files.get('index.html')?.body.toString('utf8') ?? '';
    const map = JSON.parse(/<script type="importmap">([\s\S]*?)<\/script>/.exec(html)?.[1] ?? '{}') as {
      imports: Record<string, string>;
    };
    const bare = new Map(
      Object.entries(map.imports).map(([name, target]) => [name, target.replace(/^\.\//, '')]),
    );
    for (const target of bare.values()) expect(assets.files.has(target), target).to.equal(true);
    let checked = 0;
    for (const [path, file] of assets.files) {
      if (!/\.m?js$/.test(path)) continue;
      const source = file.body.toString('utf8');
      // Static import/export statements, at the start of a line or after a `;` (minified vendors).
      for (const match of source.matchAll(
        /(?:^|;)\s*(?:import|export)\s*(?:[\w*{}\s,$]+?\s*from\s*)?["']([^"']+)["']/gm,
      )) {
        const specifier = match[1] as string;
        checked += 1;
        if (!specifier.startsWith('.')) {
          expect(bare.has(specifier), `${path} imports ${specifier}`).to.equal(true);
          continue;
        }
        const resolved = new URL(specifier, `http://x/${path}`).pathname.slice(1);
        expect(assets.files.has(resolved), `${path} imports ${specifier}`).to.equal(true);
      }
    }
    // The scan really read the imports (app.js alone has more than ten).
    expect(checked).to.be.greaterThan(40);
  });

  it('paths outside the table are JSON 404s, raw or encoded traversal included', async () => {
    for (const path of [
      '/dashboard/../package.json',
      '/dashboard/%2e%2e/package.json',
      '/dashboard/%2e%2e%2fpackage.json',
      '/dashboard/..%2f..%2fpackage.json',
      '/dashboard/vendor/../../../package.json',
      '/dashboard/vendor/..%5c..%5cpackage.json',
      '/dashboard//etc/passwd',
      '/dashboard/%2fetc%2fpasswd',
      '/dashboard/nothing.js',
      '/dashboard/lib',
      '/dashboard/.hidden',
      '/dashboard/index.html%00.js',
    ]) {
      const res = await rawGet(server.url, path);
      // Koa/the router may answer 400 for malformed encodings; never a file.
      expect([400, 404], path).to.include(res.status);
      expect(res.type, path).to.include('application/json');
      expect(res.body, path).to.not.include('"name": "folio"');
    }
  });

  it('a project may not be named dashboard', async () => {
    const t = await server.tenant();
    const res = await server.request('POST', '/api/projects', {
      session: t.session,
      body: { name: 'dashboard' },
    });
    expect(res.status).to.equal(400);
  });
});

describe('dashboard file table', () => {
  it('takes servable files of the folder and below, leaving out dot files and unknown types', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'folio-assets-'));
    try {
      await mkdir(join(dir, 'pages'));
      await mkdir(join(dir, '.git'));
      await writeFile(join(dir, 'index.html'), '<script type="importmap">{}</script>');
      await writeFile(join(dir, 'pages', 'a.js'), 'export {}');
      await writeFile(join(dir, '.env'), 'SECRET=1');
      await writeFile(join(dir, '.git', 'config'), 'x');
      await writeFile(join(dir, 'notes.md'), '# no');
      await writeFile(join(dir, 'server.ts'), 'no');
      const assets = loadDashboardAssets(dir);
      const own = [...assets.files.keys()].filter((p) => !p.startsWith('vendor/')).sort();
      expect(own).to.deep.equal(['index.html', 'pages/a.js']);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses folders nested deeper than the routes can address', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'folio-assets-'));
    try {
      await writeFile(join(dir, 'index.html'), '<script type="importmap">{}</script>');
      await mkdir(join(dir, 'a', 'b'), { recursive: true });
      expect(() => loadDashboardAssets(dir)).to.throw(/one folder deep/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('refuses to start without an index.html', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'folio-assets-'));
    try {
      expect(() => loadDashboardAssets(dir)).to.throw(/index\.html/);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
