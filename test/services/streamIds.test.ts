/**
 * Opaque event ids (services/streams/eventIds.ts) and stream tickets (tickets.ts): pure rules.
 */
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import fc from 'fast-check';
import { EVENT_ID_PREFIX, EventIds, LEGACY_EVENT_ID_PREFIX } from '../../src/services/streams/eventIds.js';
import { TicketSealer, ticketAdmits } from '../../src/services/streams/tickets.js';

const master = randomBytes(32);
const tenant = { projectId: 'prj_a', env: 'test' as const };
const other = { projectId: 'prj_b', env: 'test' as const };
const live = { projectId: 'prj_a', env: 'live' as const };

describe('opaque event ids', () => {
  const ids = new EventIds(master);

  it('round-trip any token of up to 4096 bytes, and only under the tenant that sealed it', () => {
    fc.assert(
      fc.property(fc.string({ minLength: 1, maxLength: 300 }), (token) => {
        const id = ids.forScope(tenant).encode(token);
        expect(id.startsWith(EVENT_ID_PREFIX)).to.equal(true);
        expect(ids.forScope(tenant).decode(id)).to.equal(token);
        expect(ids.forScope(other).decode(id)).to.equal(null);
        expect(ids.forScope(live).decode(id)).to.equal(null);
        // Another server's master key opens nothing either.
        expect(new EventIds(randomBytes(32)).forScope(tenant).decode(id)).to.equal(null);
      }),
      { numRuns: 200 },
    );
    const longest = 'x'.repeat(4096);
    expect(ids.forScope(tenant).decode(ids.forScope(tenant).encode(longest))).to.equal(longest);
    expect(() => ids.forScope(tenant).encode('x'.repeat(4097))).to.throw(RangeError);
  });

  it('are the same for the same token (any instance), and tell nothing of the sequence by length', () => {
    const a = new EventIds(master).forScope(tenant);
    const b = new EventIds(master).forScope(tenant);
    expect(a.encode('21249')).to.equal(b.encode('21249'));
    expect(a.encode('21249')).not.to.equal(a.encode('21251'));
    // Tokens up to 30 bytes (any embedded sequence number) all give ids of one length.
    const lengths = new Set(['1', '21249', '9'.repeat(16), 'x'.repeat(30)].map((t) => a.encode(t).length));
    expect(lengths.size).to.equal(1);
    expect(a.encode('x'.repeat(31)).length).to.be.above(a.encode('1').length);
  });

  it('take the form evt_<opaque>, and an id in the old e1_ spelling still opens as the same token', () => {
    const scope = ids.forScope(tenant);
    const id = scope.encode('21249');
    expect(id).to.match(/^evt_[A-Za-z0-9_-]+$/);
    const legacy = `${LEGACY_EVENT_ID_PREFIX}${id.slice(EVENT_ID_PREFIX.length)}`;
    expect(scope.decode(legacy)).to.equal('21249');
    expect(ids.forScope(other).decode(legacy)).to.equal(null);
  });

  it('refuse anything altered or made up', () => {
    const scope = ids.forScope(tenant);
    const id = scope.encode('42');
    fc.assert(
      fc.property(
        fc.nat({ max: id.length - EVENT_ID_PREFIX.length - 1 }),
        fc.constantFrom('A', 'B', '-', '_'),
        (i, c) => {
          const at = EVENT_ID_PREFIX.length + i;
          const altered = id.slice(0, at) + c + id.slice(at + 1);
          if (altered === id) return;
          expect(scope.decode(altered)).to.equal(null);
        },
      ),
      { numRuns: 300 },
    );
    for (const made of [
      '',
      'evt_',
      'evt_reset',
      'e1_',
      'e1_reset',
      'evt_42',
      '42',
      `evt_${'A'.repeat(86)}`,
      `e1_${'A'.repeat(86)}`,
      `evt_${'_'.repeat(9000)}`,
    ]) {
      expect(scope.decode(made), made).to.equal(null);
    }
  });
});

describe('stream tickets', () => {
  const sealer = new TicketSealer(master);
  const claims = { keyHash: 'h'.repeat(64), projectId: 'prj_a', collection: 'notes', expiresAtMs: 1_000_000 };

  it('open only as sealed, by this server', () => {
    const { ticket, claims: sealed } = sealer.seal(claims);
    expect(sealer.open(ticket)).to.deep.equal(sealed);
    expect(sealed).to.deep.include(claims);
    expect(ticket).not.to.include(claims.keyHash);
    expect(new TicketSealer(randomBytes(32)).open(ticket)).to.equal(null);
    // Two tickets for the same claims differ (their own nonce and IV).
    const again = sealer.seal(claims);
    expect(again.ticket).not.to.equal(ticket);
    expect(again.claims.nonce).not.to.equal(sealed.nonce);
    for (const bad of [
      ticket.slice(0, -1),
      `${ticket}A`,
      'st1_',
      'st1_AAAA',
      ticket.replace('st1_', 'st2_'),
    ]) {
      expect(sealer.open(bad), bad).to.equal(null);
    }
  });

  it('admit a new stream up to expiresAtMs inclusive, a reconnection at any time', () => {
    const { claims: sealed } = sealer.seal(claims);
    expect(ticketAdmits(sealed, claims.expiresAtMs, false)).to.equal(true);
    expect(ticketAdmits(sealed, claims.expiresAtMs + 1, false)).to.equal(false);
    expect(ticketAdmits(sealed, claims.expiresAtMs + 3_600_000, true)).to.equal(true);
  });
});
