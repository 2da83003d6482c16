/** The webhook rules that are pure functions: backoff, address ranges, sealing, delivery ids. */
import { createHmac, randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { decodeTime } from 'ulid';
import { deliveryIdFor } from '../../src/services/webhooks/deliveryIds.js';
import { hasRetryLeft, JITTER, retryDelayMs } from '../../src/services/webhooks/retryPolicy.js';
import { describeFailure } from '../../src/services/webhooks/sender.js';
import { generateSecret, SecretSealer, signature } from '../../src/services/webhooks/signing.js';
import { isForbiddenAddress, TargetRefusedError } from '../../src/services/webhooks/targets.js';

describe('webhook retry policy', () => {
  it('doubles from the base per retry, within ±20 % jitter', () => {
    expect(retryDelayMs(1, 1000, () => 0.5)).to.equal(1000);
    expect(retryDelayMs(2, 1000, () => 0.5)).to.equal(2000);
    expect(retryDelayMs(5, 1000, () => 0.5)).to.equal(16000);
    // ±20 % as numbers, not through JITTER, so a change of the spread fails here.
    expect(retryDelayMs(3, 1000, () => 0)).to.equal(3200);
    expect(retryDelayMs(3, 1000, () => 0.999999)).to.be.closeTo(4800, 1);
    expect(JITTER).to.equal(0.2);
  });

  it('allows exactly `retries` retries after the first attempt', () => {
    expect(hasRetryLeft(2, 2)).to.equal(true);
    expect(hasRetryLeft(3, 2)).to.equal(false);
    expect(hasRetryLeft(1, 0)).to.equal(false);
  });
});

describe('webhook target addresses', () => {
  it('refuses private, loopback, link-local, metadata and special ranges at their edges', () => {
    for (const address of [
      '10.0.0.0',
      '10.255.255.255',
      '127.0.0.1',
      '169.254.169.254',
      '172.16.0.0',
      '172.31.255.255',
      '192.168.0.1',
      '100.64.0.0',
      '100.127.255.255',
      '0.0.0.0',
      '224.0.0.1',
      '255.255.255.255',
      '::1',
      '::',
      'fe80::1',
      'fd00:ec2::254',
      'fc00::1',
      '::ffff:127.0.0.1',
      '::ffff:7f00:1',
      '::ffff:a9fe:a9fe',
      '64:ff9b::10.0.0.1',
      // IPv6 forms embedding loopback or link-local IPv4 (mapped, translated, compatible,
      // local-use NAT64, 6to4):
      '::ffff:0:7f00:1',
      '::127.0.0.1',
      '64:ff9b:1::7f00:1',
      '2002:7f00:1::1',
      '2002:a9fe:a9fe::1',
      '64:ff9b:1::a9fe:a9fe',
      '::a9fe:a9fe',
      '::ffff:0:a9fe:a9fe',
      '2002:0a00:0001::',
      '2002:c0a8:0101:ffff::1',
      'not-an-ip',
    ]) {
      expect(isForbiddenAddress(address), address).to.equal(true);
    }
  });

  it('allows public addresses just outside those ranges', () => {
    for (const address of [
      '9.255.255.255',
      '11.0.0.0',
      '172.15.255.255',
      '172.32.0.0',
      '100.63.255.255',
      '100.128.0.0',
      '169.253.255.255',
      '93.184.216.34',
      '2606:4700::1111',
      '::ffff:93.184.216.34',
      // 6to4 of a public IPv4, and the edges next to the embedding prefixes:
      '2002:5db8:d822::1',
      '2001:ffff:7f00:1::1',
      '2003:7f00:1::1',
      '64:ff9b:2::7f00:1',
    ]) {
      expect(isForbiddenAddress(address), address).to.equal(false);
    }
  });
});

describe('webhook secrets', () => {
  it('signs as sha256= + hex HMAC-SHA256 of the raw body keyed with the whole secret', () => {
    const secret = generateSecret();
    expect(secret).to.match(/^whsec_[A-Za-z0-9_-]{43}$/);
    const expected = createHmac('sha256', secret).update('{"a":1}').digest('hex');
    expect(signature('{"a":1}', secret)).to.equal(`sha256=${expected}`);
  });

  it('seals so that only the same key and webhook open it, and never stores it in the clear', () => {
    const sealer = new SecretSealer(randomBytes(32));
    const secret = generateSecret();
    const sealed = sealer.seal(secret, 'wh_1');
    expect(sealed).to.not.include(secret.slice(6));
    expect(sealer.unseal(sealed, 'wh_1')).to.equal(secret);
    expect(() => sealer.unseal(sealed, 'wh_2')).to.throw();
    expect(() => new SecretSealer(randomBytes(32)).unseal(sealed, 'wh_1')).to.throw();
    const [v, iv, tag, data] = sealed.split('.');
    const flipped = `${data!.slice(0, -2)}${data!.endsWith('AA') ? 'AB' : 'AA'}`;
    expect(() => sealer.unseal([v, iv, tag, flipped].join('.'), 'wh_1')).to.throw();
    expect(() => new SecretSealer(randomBytes(31))).to.throw(/32 bytes/);
  });
});

describe('webhook delivery ids', () => {
  it('are dlv_ ULIDs fixed by (event token, webhook), timed at the event', () => {
    const at = Date.parse('2025-03-01T12:00:00.000Z');
    const id = deliveryIdFor('tok-1', 'wh_A', at);
    expect(id).to.match(/^dlv_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(deliveryIdFor('tok-1', 'wh_A', at)).to.equal(id);
    expect(deliveryIdFor('tok-1', 'wh_B', at)).to.not.equal(id);
    expect(deliveryIdFor('tok-2', 'wh_A', at)).to.not.equal(id);
    expect(decodeTime(id.slice(4))).to.equal(at);
  });
});

describe('webhook attempt failures', () => {
  it('names the reason briefly: timeout, refused target, connection error code', () => {
    expect(describeFailure(new Error('aborted'), true)).to.equal('timeout');
    const refused = new Error('fetch failed', {
      cause: new TargetRefusedError('the host x resolves to a private address'),
    });
    expect(describeFailure(refused, false)).to.equal(
      'refused target: the host x resolves to a private address',
    );
    const reset = Object.assign(new Error('socket'), { code: 'ECONNREFUSED' });
    expect(describeFailure(new Error('outer', { cause: reset }), false)).to.equal(
      'connection error: ECONNREFUSED',
    );
    expect(describeFailure('weird', false)).to.equal('connection error');
  });
});
