/**
 * A TCP proxy in front of a server, so a test can cut every connection like a network would
 * (both sockets destroyed mid-stream, no HTTP-level end), and count the connections made.
 */
import { createServer, type Socket, connect as tcpConnect } from 'node:net';

export interface TcpProxy {
  /** `http://127.0.0.1:<port>`. */
  url: string;
  /** Connections accepted so far. */
  readonly connections: number;
  /** Destroy every open connection, both sides. */
  cut(): void;
  /** While true, every new connection is dropped at once too: the network is down. */
  down: boolean;
  close(): Promise<void>;
}

export async function startTcpProxy(target: string): Promise<TcpProxy> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<Socket>();
  let connections = 0;
  const state = { down: false };
  const proxy = createServer((client) => {
    connections++;
    if (state.down) {
      client.destroy();
      return;
    }
    const upstream = tcpConnect(Number(port), hostname);
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => {
        sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
  const address = proxy.address() as { port: number };
  return {
    url: `http://127.0.0.1:${address.port}`,
    get connections() {
      return connections;
    },
    get down() {
      return state.down;
    },
    set down(down: boolean) {
      state.down = down;
      if (down) for (const socket of sockets) socket.destroy();
    },
    cut: () => {
      for (const socket of sockets) socket.destroy();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        proxy.close(() => resolve());
      }),
  };
}
