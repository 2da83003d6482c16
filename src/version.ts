/** Folio's version, from package.json (two levels up from src/, three from the compiled dist/src/). */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const PACKAGE_FILE = ['../package.json', '../../package.json']
  .map((relative) => fileURLToPath(new URL(relative, import.meta.url)))
  .find((file) => existsSync(file));

export const FOLIO_VERSION: string = PACKAGE_FILE
  ? (JSON.parse(readFileSync(PACKAGE_FILE, 'utf8')) as { version: string }).version
  : '0.0.0';
