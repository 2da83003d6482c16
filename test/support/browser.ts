/**
 * A real headless Chromium (Debian's `chromium` package) driven by playwright-core, never a
 * downloaded browser. Suites call `chromiumAvailable()` first: without /usr/bin/chromium they print
 * one SKIPPED line and skip, so `npm test` stays green on machines without it.
 */
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { type BrowserContext, chromium, type Page } from 'playwright-core';

export const CHROMIUM_PATH = '/usr/bin/chromium';

const ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

let announced = false;

export function chromiumAvailable(): boolean {
  const available = existsSync(CHROMIUM_PATH);
  if (!available && !announced) {
    announced = true;
    console.log(`SKIPPED: no Chromium (${CHROMIUM_PATH} is absent; apt-get install -y chromium)`);
  }
  return available;
}

export interface BrowserSession {
  context: BrowserContext;
  page: Page;
  close(): Promise<void>;
}

/** Chromium on a new, empty profile, with a fixed viewport, locale and time zone (stable screenshots). */
export async function openBrowser(): Promise<BrowserSession> {
  const profile = await mkdtemp(join(tmpdir(), 'folio-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM_PATH,
    headless: true,
    args: ARGS,
    viewport: { width: 1280, height: 860 },
    locale: 'en-US',
    timezoneId: 'UTC',
  });
  const page = context.pages()[0] ?? (await context.newPage());
  return {
    context,
    page,
    async close() {
      await context.close();
      await rm(profile, { recursive: true, force: true });
    },
  };
}

/** Where screenshots go: test-output/screenshots (gitignored), and docs/screenshots when asked. */
export async function screenshot(page: Page, name: string): Promise<void> {
  const dirs = [join('test-output', 'screenshots')];
  if (process.env.FOLIO_DOCS_SCREENSHOTS === '1') dirs.push(join('docs', 'screenshots'));
  for (const dir of dirs) {
    await mkdir(dir, { recursive: true });
    await page.screenshot({ path: join(dir, `${name}.png`), fullPage: true });
  }
}
