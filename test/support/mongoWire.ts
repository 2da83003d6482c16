/**
 * A scripted MongoDB server for driving the real `mongodb` driver through fault paths no test
 * can provoke without a replica set: a TCP server on 127.0.0.1 speaking the wire protocol
 * (the OP_QUERY handshake, then OP_MSG), answering each command with whatever the test's
 * handler returns (a reply document, an error document, or a promise of one, to hold a
 * connection). It answers `hello`/`isMaster` as a replica-set primary itself, and records every
 * command it received.
 */
import { once } from 'node:events';
import { createServer, type Server, type Socket } from 'node:net';
import { BSON, type Document, Long } from 'mongodb';

const { deserialize, serialize } = BSON;

const OP_REPLY = 1;
const OP_QUERY = 2004;
const OP_MSG = 2013;

export type Handler = (command: Document, name: string) => Document | Promise<Document> | undefined;

export interface WireServer {
  port: number;
  uri: string;
  /** Every command received, in order, except hello and isMaster. */
  commands: Document[];
  close(): Promise<void>;
}

export function helloReply(port: number): Document {
  return {
    helloOk: true,
    isWritablePrimary: true,
    ismaster: true,
    setName: 'rs0',
    hosts: [`127.0.0.1:${port}`],
    me: `127.0.0.1:${port}`,
    primary: `127.0.0.1:${port}`,
    maxBsonObjectSize: 16 * 1024 * 1024,
    maxMessageSizeBytes: 48_000_000,
    maxWriteBatchSize: 100_000,
    localTime: new Date(),
    minWireVersion: 0,
    maxWireVersion: 21,
    ok: 1,
  };
}

/** A reply carrying a cursor (`firstBatch` for aggregate/find, `nextBatch` for getMore). */
export function cursorReply(
  id: number,
  batch: Document[],
  postBatchResumeToken: string | null,
  first: boolean,
): Document {
  return {
    cursor: {
      id: Long.fromNumber(id),
      ns: 'admin.$cmd.aggregate',
      [first ? 'firstBatch' : 'nextBatch']: batch,
      ...(postBatchResumeToken ? { postBatchResumeToken: { _data: postBatchResumeToken } } : {}),
    },
    ok: 1,
  };
}

export function errorReply(code: number, codeName: string, errmsg: string): Document {
  return { ok: 0, code, codeName, errmsg };
}

function header(length: number, requestId: number, responseTo: number, opCode: number): Buffer {
  const buffer = Buffer.alloc(16);
  buffer.writeInt32LE(length, 0);
  buffer.writeInt32LE(requestId, 4);
  buffer.writeInt32LE(responseTo, 8);
  buffer.writeInt32LE(opCode, 12);
  return buffer;
}

let nextRequestId = 1;

function opReply(responseTo: number, doc: Document): Buffer {
  const body = serialize(doc);
  const fields = Buffer.alloc(20);
  // responseFlags 0, cursorID 0, startingFrom 0, numberReturned 1.
  fields.writeInt32LE(1, 16);
  return Buffer.concat([header(16 + 20 + body.length, nextRequestId++, responseTo, OP_REPLY), fields, body]);
}

function opMsg(responseTo: number, doc: Document): Buffer {
  const body = serialize(doc);
  const flags = Buffer.alloc(5); // flagBits 0, then section kind 0
  return Buffer.concat([header(16 + 5 + body.length, nextRequestId++, responseTo, OP_MSG), flags, body]);
}

/** The command of an OP_MSG body: the kind-0 section, plus kind-1 sequences as arrays. */
function readOpMsg(body: Buffer): Document {
  let at = 4;
  let command: Document = {};
  const sequences: Array<[string, Document[]]> = [];
  while (at < body.length) {
    const kind = body[at]!;
    at += 1;
    const size = body.readInt32LE(at);
    if (kind === 0) {
      command = deserialize(body.subarray(at, at + size));
      at += size;
    } else {
      const end = at + size;
      let p = at + 4;
      const nameEnd = body.indexOf(0, p);
      const name = body.toString('utf8', p, nameEnd);
      p = nameEnd + 1;
      const docs: Document[] = [];
      while (p < end) {
        const docSize = body.readInt32LE(p);
        docs.push(deserialize(body.subarray(p, p + docSize)));
        p += docSize;
      }
      sequences.push([name, docs]);
      at = end;
    }
  }
  for (const [name, docs] of sequences) command[name] = docs;
  return command;
}

export interface WireOptions {
  /** The `hello` reply (default: a replica-set primary, `helloReply`). */
  hello?: (port: number) => Document;
}

export async function startWireServer(handler: Handler, options: WireOptions = {}): Promise<WireServer> {
  const hello = options.hello ?? helloReply;
  const sockets = new Set<Socket>();
  const commands: Document[] = [];
  let port = 0;
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    let pending = Buffer.alloc(0);
    socket.on('data', (chunk) => {
      pending = Buffer.concat([pending, chunk]);
      while (pending.length >= 4) {
        const length = pending.readInt32LE(0);
        if (pending.length < length) break;
        const message = pending.subarray(0, length);
        pending = pending.subarray(length);
        void answer(socket, message);
      }
    });
  });

  async function answer(socket: Socket, message: Buffer): Promise<void> {
    const requestId = message.readInt32LE(4);
    const opCode = message.readInt32LE(12);
    let command: Document;
    if (opCode === OP_QUERY) {
      // flags(4), fullCollectionName(cstring), numberToSkip(4), numberToReturn(4), query.
      const nameEnd = message.indexOf(0, 20);
      command = deserialize(message.subarray(nameEnd + 9));
    } else if (opCode === OP_MSG) {
      command = readOpMsg(message.subarray(16));
    } else {
      return;
    }
    const name = Object.keys(command)[0] ?? '';
    let reply: Document | undefined;
    if (name === 'hello' || name === 'isMaster' || name === 'ismaster') {
      reply = hello(port);
    } else {
      commands.push(command);
      reply = await handler(command, name);
      reply ??= name === 'endSessions' || name === 'killCursors' || name === 'ping' ? { ok: 1 } : undefined;
      reply ??= errorReply(59, 'CommandNotFound', `no script for ${name}`);
    }
    if (socket.destroyed) return;
    socket.write(opCode === OP_QUERY ? opReply(requestId, reply) : opMsg(requestId, reply));
  }

  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const address = server.address();
  port = typeof address === 'object' && address ? address.port : 0;
  return {
    port,
    uri: `mongodb://127.0.0.1:${port}/?directConnection=true&serverMonitoringMode=poll&heartbeatFrequencyMS=500`,
    commands,
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
