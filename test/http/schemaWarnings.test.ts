/**
 * A schema in warn mode lets violating writes through, logs them (paths and keywords, never the
 * values) and counts them in `folio_schema_violations_total{mode}`; enforce mode counts its
 * refusals there too.
 */
import { expect } from 'chai';
import { startTestServer, type TestServer } from '../support/server.js';

const TOKEN = 'metrics-token-schemas-0123';

describe('collection schemas: warn mode is logged and counted', () => {
  let server: TestServer;
  const lines: string[] = [];
  before(async () => {
    server = await startTestServer({
      config: { metrics: { enabled: true, token: TOKEN } },
      logStream: { write: (line: string) => void lines.push(line) },
    });
  });
  after(() => server.close());

  const count = async (mode: string): Promise<number> => {
    const res = await server.request('GET', '/metrics', { headers: { Authorization: `Bearer ${TOKEN}` } });
    const match = new RegExp(`^folio_schema_violations_total\\{mode="${mode}"\\} (\\d+)$`, 'm').exec(
      res.text,
    );
    return match ? Number(match[1]) : 0;
  };

  it('logs and counts without refusing; enforce refusals are counted apart', async () => {
    const tenant = await server.tenant();
    const at = (c: string, rest = '') => `/${tenant.project}/${c}${rest}`;
    const schema = { type: 'object', properties: { n: { type: 'number' } } };
    await server.request('PUT', at('tried', '/_schema'), { key: tenant.key, body: { schema, mode: 'warn' } });
    await server.request('PUT', at('strict', '/_schema'), { key: tenant.key, body: { schema } });

    const warned = await server.request('POST', at('tried'), {
      key: tenant.key,
      body: { n: 'SECRET-VALUE' },
    });
    expect(warned.status).to.equal(201);
    expect(await server.request('POST', at('tried'), { key: tenant.key, body: { n: 1 } })).to.have.property(
      'status',
      201,
    );
    expect(
      (await server.request('POST', at('strict'), { key: tenant.key, body: { n: 'x' } })).status,
    ).to.equal(422);

    expect(await count('warn')).to.equal(1);
    expect(await count('enforce')).to.equal(1);
    const logged = lines.filter((l) => l.includes('schema violation allowed'));
    expect(logged).to.have.length(1);
    expect(logged[0]).to.include('"instancePath":"/n"').and.include('"keyword":"type"');
    expect(logged[0]).to.not.include('SECRET-VALUE');
  });
});
