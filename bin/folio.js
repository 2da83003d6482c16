#!/usr/bin/env node
// Runs the JavaScript that `npm install` compiled into dist/ (the `prepare` script) when it is
// at least as new as every .ts file under src/: a command starts in a fraction of the time tsx
// takes to compile the sources. Otherwise (no build, or a source edited since) the TypeScript
// sources run through tsx, so an edit takes effect without a build step.
import { existsSync, readdirSync, statSync } from 'node:fs';
import module from 'node:module';

// Node 22.1+ keeps V8's compiled code between runs (Node 20 has no such cache).
module.enableCompileCache?.();

const root = new URL('../', import.meta.url);
const compiled = new URL('dist/src/cli/main.js', root);

/** The newest modification time among the TypeScript files under src/ (a few ms for ~250). */
function newestSource() {
  const src = new URL('src/', root);
  let newest = 0;
  for (const file of readdirSync(src, { recursive: true })) {
    // The dashboard's browser files are served from src/ either way: only .ts is compiled.
    if (file.endsWith('.ts')) newest = Math.max(newest, statSync(new URL(file, src)).mtimeMs);
  }
  return newest;
}

if (existsSync(compiled) && statSync(compiled).mtimeMs >= newestSource()) {
  await import(compiled.href);
} else {
  const { register } = await import('tsx/esm/api');
  register();
  await import('../src/cli/main.ts');
}
