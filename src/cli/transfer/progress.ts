/**
 * What the user sees while a transfer runs: a progress bar (documents and bytes, rate, ETA) on
 * a terminal, nothing on a pipe; at the end one JSON line when not on a terminal (for
 * scripts), a short sentence when on one.
 */
import cliProgress from 'cli-progress';

export interface Progress {
  /** `value` and `total` are what the bar measures (bytes of the file, or documents). */
  update(value: number, docs: number, bytes: number): void;
  note(message: string): void;
  stop(): void;
}

function humanBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1024 ** 2) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1024 ** 2).toFixed(1)} MiB`;
}

export function startProgress(label: string, total: number, interactive: boolean): Progress {
  if (!interactive) return { update() {}, note() {}, stop() {} };
  const started = Date.now();
  const bar = new cliProgress.SingleBar(
    {
      format: `${label} |{bar}| {percentage}% | {docs} docs | {bytes} | {rate} docs/s | ETA {eta_formatted}`,
      stream: process.stderr,
      hideCursor: true,
      etaBuffer: 20,
      fps: 10,
    },
    cliProgress.Presets.shades_classic,
  );
  let last = { value: 0, payload: { docs: 0, bytes: humanBytes(0), rate: 0 } };
  bar.start(Math.max(total, 1), 0, last.payload);
  return {
    update(value, docs, bytes) {
      const seconds = Math.max((Date.now() - started) / 1000, 0.001);
      last = { value, payload: { docs, bytes: humanBytes(bytes), rate: Math.round(docs / seconds) } };
      bar.update(value, last.payload);
    },
    note(message) {
      bar.stop();
      process.stderr.write(`${message}\n`);
      bar.start(Math.max(total, 1), last.value, last.payload);
    },
    stop() {
      bar.stop();
    },
  };
}

/** The closing line: JSON for scripts, a sentence for people. */
export function summaryLine(
  summary: Record<string, unknown>,
  interactive: boolean,
  sentence: string,
): string {
  return `${interactive ? sentence : JSON.stringify(summary)}\n`;
}
