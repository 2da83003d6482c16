/**
 * The change-stream benchmark's floor: a bare `node:http` server with the same two routes the
 * load generators use (`GET /{ns}/{collection}/_stream`, `POST /{ns}/{collection}`), that keeps
 * no store, checks no key and, on each POST, writes one SSE frame (one Buffer) to every open
 * stream of the collection. What remains of Folio's latency next to it, measured in the same
 * run by the same clients, is Folio's own; the rest is what the machine (and its load) costs
 * any Node server delivering one event to that many sockets.
 */
import { createServer, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface BareFanOut {
  url: string;
  close(): Promise<void>;
}

export async function startBareFanOut(): Promise<BareFanOut> {
  const streams = new Map<string, Set<ServerResponse>>();
  let seq = 0;
  const server = createServer((req, res) => {
    const path = req.url ?? '';
    if (req.method === 'GET' && path.endsWith('/_stream')) {
      const collection = path.slice(0, -'/_stream'.length);
      res.writeHead(200, { 'Content-Type': 'text/event-stream; charset=utf-8', Connection: 'close' });
      res.write('retry: 3000\n\n');
      let set = streams.get(collection);
      if (!set) {
        set = new Set();
        streams.set(collection, set);
      }
      set.add(res);
      res.once('close', () => set.delete(res));
      return;
    }
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      seq += 1;
      const now = new Date().toISOString();
      const document = {
        _id: `doc_${seq}`,
        ...(JSON.parse(Buffer.concat(chunks).toString()) as object),
        $createdAt: now,
        $updatedAt: now,
        $version: 1,
      };
      const data = { event: 'document.created', timestamp: now, collection: path, project: 'bare', document };
      const frame = Buffer.from(`event: document.created\nid: evt_${seq}\ndata: ${JSON.stringify(data)}\n\n`);
      for (const stream of streams.get(path) ?? []) stream.write(frame);
      res.writeHead(201, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(document));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
