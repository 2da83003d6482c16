// Preloaded into a `folio serve` process by memory tests (`--expose-gc --require` this file;
// memoryProbe.ts starts and asks it): on SIGUSR2 it runs a full garbage collection and writes
// process.memoryUsage() to the file named by MEMORY_PROBE_FILE. What a test reads is then what
// the server holds, not how long V8 happened to leave garbage lying about, which swings the
// resident size by ±100 MiB between runs.
const { writeFileSync, renameSync } = require('node:fs');

const file = process.env.MEMORY_PROBE_FILE;
if (file) {
  process.on('SIGUSR2', () => {
    globalThis.gc();
    const temporary = `${file}.tmp`;
    writeFileSync(temporary, JSON.stringify(process.memoryUsage()));
    // Renamed into place, so a reader never sees half a file.
    renameSync(temporary, file);
  });
}
