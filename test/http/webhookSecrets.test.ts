/** Webhook secrets: never in GET answers, logs, errors or the database in the clear. */
import { existsSync } from 'node:fs';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { expect } from 'chai';
import { SEALING_KEY_FILE } from '../../src/store/embedded/webhooks/webhooks.js';
import { startReceiver } from '../support/receiver.js';
import { startTestServer } from '../support/server.js';

describe('webhook secrets stay secret', () => {
  it('appear only in the register and rotate answers: not in logs, errors, deliveries or the database', async () => {
    const lines: string[] = [];
    const sink = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const receiver = await startReceiver();
    receiver.respond = () => 500;
    const server = await startTestServer({
      logStream: sink,
      config: { logLevel: 'debug', webhooks: { allowPrivateTargets: true, backoffBaseMs: 10, pollMs: 30 } },
    });
    try {
      const tenant = await server.tenant();
      const base = `/${tenant.project}/orders/_webhooks`;
      const created = await server.request('POST', base, {
        key: tenant.key,
        body: { url: `${receiver.url}/s`, events: ['document.created'] },
      });
      const rotated = await server.request('POST', `${base}/${created.body.id}/rotate-secret`, {
        key: tenant.key,
      });
      const secrets = [created.body.secret as string, rotated.body.secret as string];
      const answers: string[] = [];
      answers.push((await server.request('GET', base, { key: tenant.key })).text);
      answers.push((await server.request('GET', `${base}/${created.body.id}`, { key: tenant.key })).text);
      answers.push(
        (await server.request('POST', `${base}/${created.body.id}/test`, { key: tenant.key })).text,
      );
      answers.push(
        (
          await server.request('PATCH', `${base}/${created.body.id}`, {
            key: tenant.key,
            body: { url: 'ftp://x' },
          })
        ).text,
      );
      await server.request('POST', `/${tenant.project}/orders`, { key: tenant.key, body: { a: 1 } });
      await receiver.waitFor(4);
      answers.push((await server.request('GET', `${base}/${created.body.id}`, { key: tenant.key })).text);

      const dir = server.running.services.config.dataDir;
      const files = (await readdir(dir)).filter((f) => f.startsWith('folio.db'));
      const bytes = Buffer.concat(await Promise.all(files.map((f) => readFile(join(dir, f)))));
      for (const secret of secrets) {
        for (const answer of answers) expect(answer).to.not.include(secret);
        expect(lines.join('\n')).to.not.include(secret);
        expect(bytes.includes(Buffer.from(secret)), 'secret in the database').to.equal(false);
        expect(bytes.includes(Buffer.from(secret.slice(6))), 'secret body in the database').to.equal(false);
      }
      // The sealing key sits beside the database, not in it, readable by its owner only.
      const keyFile = join(dir, SEALING_KEY_FILE);
      expect(existsSync(keyFile)).to.equal(true);
      const { stat } = await import('node:fs/promises');
      expect((await stat(keyFile)).mode & 0o077).to.equal(0);
    } finally {
      await server.close();
      await receiver.close();
    }
  });

  it('uses webhooks.secretKey when configured and then keeps no key of its own', async () => {
    const server = await startTestServer({
      config: {
        webhooks: { allowPrivateTargets: true, secretKey: Buffer.alloc(32, 7).toString('base64') },
      },
    });
    try {
      const tenant = await server.tenant();
      const res = await server.request('POST', `/${tenant.project}/orders/_webhooks`, {
        key: tenant.key,
        body: { url: 'http://127.0.0.1:9/x', events: ['document.created'] },
      });
      expect(res.status).to.equal(201);
      expect(existsSync(join(server.running.services.config.dataDir, SEALING_KEY_FILE))).to.equal(false);
    } finally {
      await server.close();
    }
  });
});
