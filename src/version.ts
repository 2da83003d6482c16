/** Folio's version, from package.json (found from src/ and from the compiled dist/src/). */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const PACKAGE_FILE = ['../package.json', '../../package.json']
  .map((relative) => fileURLToPath(new URL(relative, import.meta.url)))
  .find((file) => existsSync(file) && JSON.parse(readFileSync(file, 'utf8')).name === 'folio');

export const FOLIO_VERSION: string = PACKAGE_FILE
  ? String(JSON.parse(readFileSync(PACKAGE_FILE, 'utf8')).version)
  : '0.0.0';
