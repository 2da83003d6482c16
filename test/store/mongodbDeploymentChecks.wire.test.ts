/**
 * What the MongoDB store makes of deployments the review found mishandled, through the real
 * driver against a scripted server (test/support/mongoWire.ts): a direct connection to a
 * secondary and a secondary read preference are refused at start-up with a message saying
 * what to change, and a `mongos` (no `lastWrite` in its heartbeats) still gives "from now"
 * streams a known start time.
 */
import { expect } from 'chai';
import { type Document, MongoClient, type ServerHeartbeatSucceededEvent, Timestamp } from 'mongodb';
import { MongoChangeFeed } from '../../src/store/mongodb/changes/changes.js';
import { ClusterClock } from '../../src/store/mongodb/changes/clusterClock.js';
import { createMongoStore } from '../../src/store/mongodb/index.js';
import { StoreStartError } from '../../src/store/port.js';
import { cursorReply, helloReply, startWireServer } from '../support/mongoWire.js';

const buildInfo = { version: '7.0.14', versionArray: [7, 0, 14, 0], ok: 1 };

describe('MongoDB store: deployments refused or handled at start-up (scripted server)', function () {
  this.timeout(15_000);

  it('refuses directConnection to a secondary, naming the host, the set and the fix', async () => {
    const server = await startWireServer((_command, name) => (name === 'buildInfo' ? buildInfo : undefined), {
      hello: (port) => ({
        ...helloReply(port),
        isWritablePrimary: false,
        ismaster: false,
        secondary: true,
        primary: '10.0.0.9:27017',
      }),
    });
    const store = createMongoStore({
      uri: server.uri,
      dbPrefix: 'wirecheck',
      clientOptions: { serverSelectionTimeoutMS: 2_000 },
    });
    try {
      const error = await store.init().catch((e: unknown) => e);
      expect(error).to.be.instanceOf(StoreStartError);
      const message = (error as Error).message;
      expect(message).to.include(`127.0.0.1:${server.port}`).and.include('a secondary');
      expect(message).to.include('?replicaSet=rs0').and.include('directConnection=true');
      // Refused before any write was tried.
      expect(server.commands.map((c) => Object.keys(c)[0])).to.not.include('insert');
    } finally {
      await store.close();
      await server.close();
    }
  });

  it('refuses readPreference=secondaryPreferred in the URI before connecting', async () => {
    const server = await startWireServer(() => undefined);
    const store = createMongoStore({
      uri: `${server.uri}&readPreference=secondaryPreferred`,
      dbPrefix: 'wirecheck',
    });
    try {
      const error = await store.init().catch((e: unknown) => e);
      expect(error).to.be.instanceOf(StoreStartError);
      expect((error as Error).message).to.include('readPreference=secondaryPreferred');
      expect(server.commands).to.deep.equal([]);
    } finally {
      await store.close();
      await server.close();
    }
  });

  it('on a mongos, whose heartbeats carry no lastWrite, a "from now" stream starts at its cluster time', async () => {
    const clusterTime = new Timestamp({ t: 1_800_000_000, i: 7 });
    const aggregates: Document[] = [];
    const server = await startWireServer(
      (command, name) => {
        if (name === 'aggregate') {
          aggregates.push(command);
          return cursorReply(100, [], '8200000001', true);
        }
        if (name === 'getMore') return cursorReply(100, [], '8200000001', false);
        return undefined;
      },
      {
        hello: (port) => {
          const { setName: _set, hosts: _hosts, primary: _primary, ...rest } = helloReply(port);
          return {
            ...rest,
            msg: 'isdbgrid',
            $clusterTime: { clusterTime, signature: { hash: Buffer.alloc(20), keyId: 0 } },
          };
        },
      },
    );
    const client = new MongoClient(server.uri, { serverSelectionTimeoutMS: 2_000 });
    const clock = new ClusterClock();
    // As the store wires it (src/store/mongodb/index.ts).
    client.on('serverHeartbeatSucceeded', (event: ServerHeartbeatSucceededEvent) =>
      clock.observeHello(event.reply),
    );
    const feed = new MongoChangeFeed(client, 'folio', clock, () => {});
    try {
      await client.connect();
      const deadline = Date.now() + 5_000;
      while (!clock.latest && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
      expect(clock.latest?.toString()).to.equal(clusterTime.toString());
      const sub = feed.watchAll();
      await sub.ready;
      const start = (aggregates[0]!.pipeline as Document[])[0]!.$changeStream as Document;
      expect((start.startAtOperationTime as Timestamp).toString()).to.equal(clusterTime.toString());
      sub.close();
    } finally {
      await feed.close();
      await client.close();
      await server.close();
    }
  });
});
