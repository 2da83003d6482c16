import { expect } from 'chai';
import { firstSegment, isOwnPath } from '../../src/http/routing.js';
import { RESERVED_PROJECT_NAMES } from '../../src/services/accounts.js';
import { forEachStore } from '../support/stores.js';

describe('routing by first segment', () => {
  it('takes the first segment of a path', () => {
    expect(firstSegment('/acme/items/1')).to.equal('acme');
    expect(firstSegment('/acme')).to.equal('acme');
    expect(firstSegment('/acme/')).to.equal('acme');
    expect(firstSegment('/')).to.equal('');
    expect(firstSegment('//x')).to.equal('');
  });

  it('sends every reserved name, in any case, to Folio’s own routes and anything else to the projects', () => {
    for (const name of RESERVED_PROJECT_NAMES) {
      expect(isOwnPath(`/${name}`), name).to.equal(true);
      expect(isOwnPath(`/${name.toUpperCase()}/x`), name).to.equal(true);
      expect(isOwnPath(`/${name}x/y`), `${name}x`).to.equal(false);
    }
    expect(isOwnPath('/acme/items')).to.equal(false);
    // `GET /` is Folio's own (its index of links); an empty first segment is no name at all.
    expect(isOwnPath('/')).to.equal(true);
    expect(isOwnPath('//x')).to.equal(false);
    // Percent-encoded, a reserved name is a project path; the data routes then refuse it (below).
    expect(isOwnPath('/%61pi/keys')).to.equal(false);
  });
});

forEachStore('routing by first segment over HTTP', (ctx) => {
  it('answers Folio’s own routes in any case, and a reserved name spelt another way is never a project', async () => {
    expect((await ctx.server.request('GET', '/HEALTHZ')).status).to.equal(200);
    const projects = await ctx.server.request('GET', '/API/projects', { session: ctx.tenant.session });
    expect(projects.status).to.equal(200);
    const encoded = await ctx.server.request('GET', '/%61pi/items/x', { key: ctx.tenant.key });
    expect(encoded.status).to.equal(404);
    expect(encoded.body.error.code).to.equal('not_found');
  });

  it('a project path that matches no data route is a JSON 404, a wrong method a JSON 405', async () => {
    const missing = await ctx.server.request('GET', `/${ctx.tenant.project}/items/x/y/z/w`, {
      key: ctx.tenant.key,
    });
    expect(missing.status).to.equal(404);
    expect(missing.body.error.code).to.equal('not_found');
    const wrong = await ctx.server.request('POST', `/${ctx.tenant.project}/items/x`, {
      key: ctx.tenant.key,
      body: {},
    });
    expect(wrong.status).to.equal(405);
    expect(wrong.body.error.code).to.equal('method_not_allowed');
    const ownWrong = await ctx.server.request('DELETE', '/healthz');
    expect(ownWrong.status).to.equal(405);
    expect(ownWrong.body.error.code).to.equal('method_not_allowed');
  });

  it('matches a data route’s literal segments in any case, before reading them as a document id', async () => {
    const webhooks = await ctx.server.request('GET', `/${ctx.tenant.project}/items/_WebHooks`, {
      key: ctx.tenant.key,
    });
    expect(webhooks.status).to.equal(200);
    expect(webhooks.body).to.have.property('webhooks');
  });

  it('a plain OPTIONS on a data path names the methods its routes take, with no key', async () => {
    const res = await ctx.server.request('OPTIONS', `/${ctx.tenant.project}/items/x`);
    expect(res.status).to.equal(200);
    const allow = (res.headers.get('allow') ?? '').split(', ');
    expect(allow).to.include.members(['GET', 'HEAD', 'PUT', 'PATCH', 'DELETE']);
    expect(allow).to.not.include('POST');
  });
});
