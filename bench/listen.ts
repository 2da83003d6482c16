/**
 * How the baseline servers of the peer bench run: on an ephemeral loopback port announced on
 * stdout (the parent reads the URL from it), stopping cleanly on SIGTERM.
 */
import type Koa from 'koa';

export function serveForBench(app: Koa): void {
  const server = app.listen(0, '127.0.0.1', () => {
    const address = server.address();
    if (address && typeof address === 'object')
      process.stdout.write(`listening on http://127.0.0.1:${address.port}\n`);
  });
  process.on('SIGTERM', () => server.close(() => process.exit(0)));
}
