/** The webhook rules that are pure functions: backoff, address ranges, sealing, delivery ids. */
import { createHmac, randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { decodeTime } from 'ulid';
import { deliveryIdFor } from '../../src/services/webhooks/deliveryIds.js';
import { hasRetryLeft, JITTER, retryDelayMs } from '../../src/services/webhooks/retryPolicy.js';
import { describeFailure } from '../../src/services/webhooks/sender.js';
import { generateSecret, SecretSealer, signature } from '../../src/services/webhooks/signing.js';
import {
  isForbiddenAddress,
  isGloballyReachable,
  TargetRefusedError,
} from '../../src/services/webhooks/targets.js';

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
  /** [address, globally reachable]: each range's first and last address, and its neighbours. */
  const IPV4_EDGES: Array<[string, boolean]> = [
    ['0.0.0.0', false],
    ['0.255.255.255', false],
    ['1.0.0.0', true],
    ['9.255.255.255', true],
    ['10.0.0.0', false],
    ['10.255.255.255', false],
    ['11.0.0.0', true],
    ['100.63.255.255', true],
    ['100.64.0.0', false],
    ['100.127.255.255', false],
    ['100.128.0.0', true],
    ['126.255.255.255', true],
    ['127.0.0.0', false],
    ['127.255.255.255', false],
    ['128.0.0.0', true],
    ['169.253.255.255', true],
    ['169.254.0.0', false],
    ['169.254.169.254', false],
    ['169.254.255.255', false],
    ['169.255.0.0', true],
    ['172.15.255.255', true],
    ['172.16.0.0', false],
    ['172.31.255.255', false],
    ['172.32.0.0', true],
    ['191.255.255.255', true],
    ['192.0.0.0', false],
    ['192.0.0.8', false],
    ['192.0.0.9', true],
    ['192.0.0.10', true],
    ['192.0.0.11', false],
    ['192.0.0.255', false],
    ['192.0.1.0', true],
    ['192.0.1.255', true],
    ['192.0.2.0', false],
    ['192.0.2.255', false],
    ['192.0.3.0', true],
    ['192.88.98.255', true],
    ['192.88.99.0', false],
    ['192.88.99.255', false],
    ['192.88.100.0', true],
    ['192.167.255.255', true],
    ['192.168.0.0', false],
    ['192.168.255.255', false],
    ['192.169.0.0', true],
    ['198.17.255.255', true],
    ['198.18.0.0', false],
    ['198.19.255.255', false],
    ['198.20.0.0', true],
    ['198.51.99.255', true],
    ['198.51.100.0', false],
    ['198.51.100.255', false],
    ['198.51.101.0', true],
    ['203.0.112.255', true],
    ['203.0.113.0', false],
    ['203.0.113.255', false],
    ['203.0.114.0', true],
    ['223.255.255.255', true],
    ['224.0.0.0', false],
    ['239.255.255.255', false],
    ['240.0.0.0', false],
    ['255.255.255.254', false],
    ['255.255.255.255', false],
    ['93.184.216.34', true],
  ];

  const IPV6_EDGES: Array<[string, boolean]> = [
    // Global unicast 2000::/3; everything outside it is refused.
    ['1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', false],
    ['2000::', true],
    ['3ffe:ffff:ffff:ffff:ffff:ffff:ffff:ffff', true],
    ['4000::', false],
    ['5f00::1', false],
    ['::', false],
    ['::1', false],
    ['fc00::1', false],
    ['fd00:ec2::254', false],
    ['fe80::1', false],
    ['fec0::', false],
    ['fec0::1', false],
    ['feff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', false],
    ['ff02::1', false],
    ['100::', false],
    // IPv4-compatible and -translated forms and the rest of ::/8: reserved.
    ['::127.0.0.1', false],
    ['::93.184.216.34', false],
    ['::ffff:0:5db8:d822', false],
    ['::ffff:0:0:7f00:1', false],
    // IETF protocol assignments 2001::/23, Teredo 2001::/32 in it, and its global exceptions.
    ['2000:ffff:ffff:ffff:ffff:ffff:ffff:ffff', true],
    ['2001::', false],
    ['2001:0:ffff:ffff:ffff:ffff:ffff:ffff', false],
    ['2001::80ff:fffe', false],
    ['2001:0:4136:e378:8000:63bf:80ff:fffe', false],
    ['2001::5601:5601', false],
    ['2001:1::', false],
    ['2001:1::1', true],
    ['2001:1::2', true],
    ['2001:1::3', true],
    ['2001:1::4', false],
    ['2001:2::', false],
    ['2001:2:ffff:ffff:ffff:ffff:ffff:ffff', false],
    ['2001:3::', true],
    ['2001:3:ffff:ffff:ffff:ffff:ffff:ffff', true],
    ['2001:4::', false],
    ['2001:4:111:ffff:ffff:ffff:ffff:ffff', false],
    ['2001:4:112::', true],
    ['2001:4:112:ffff:ffff:ffff:ffff:ffff', true],
    ['2001:4:113::', false],
    ['2001:10::', false],
    ['2001:1f:ffff:ffff:ffff:ffff:ffff:ffff', false],
    ['2001:20::', true],
    ['2001:3f:ffff:ffff:ffff:ffff:ffff:ffff', true],
    ['2001:40::', false],
    ['2001:1ff:ffff:ffff:ffff:ffff:ffff:ffff', false],
    ['2001:200::', true],
    // Documentation.
    ['2001:db7:ffff:ffff:ffff:ffff:ffff:ffff', true],
    ['2001:db8::', false],
    ['2001:db8:ffff:ffff:ffff:ffff:ffff:ffff', false],
    ['2001:db9::', true],
    ['3fff::', false],
    ['3fff:fff:ffff:ffff:ffff:ffff:ffff:ffff', false],
    ['3fff:1000::', true],
    ['3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', true],
    // 6to4 2002::/16, judged by the IPv4 in bits 16-47.
    ['2001:ffff:ffff:ffff:ffff:ffff:ffff:ffff', true],
    ['2002::', false],
    ['2002:7f00:1::1', false],
    ['2002:a9fe:a9fe::1', false],
    ['2002:c0a8:0101:ffff::1', false],
    ['2002:5db8:d822::1', true],
    ['2002:ffff:ffff:ffff:ffff:ffff:ffff:ffff', false],
    ['2003::', true],
    // IPv4-mapped ::ffff:0:0/96, judged by its IPv4.
    ['::fffe:ffff:ffff', false],
    ['::ffff:0.0.0.0', false],
    ['::ffff:127.0.0.1', false],
    ['::ffff:7f00:1', false],
    ['::ffff:a9fe:a9fe', false],
    ['::ffff:93.184.216.34', true],
    ['::ffff:255.255.255.255', false],
    ['::1:0:0:0', false],
    // NAT64 64:ff9b::/96, judged by its IPv4; the local-use 64:ff9b:1::/48 is outside 2000::/3.
    ['64:ff9a:ffff:ffff:ffff:ffff:ffff:ffff', false],
    ['64:ff9b::', false],
    ['64:ff9b::10.0.0.1', false],
    ['64:ff9b::93.184.216.34', true],
    ['64:ff9b::ffff:ffff', false],
    ['64:ff9b::1:0:0', false],
    ['64:ff9b:1::5db8:d822', false],
    ['64:ff9b:1::7f00:1', false],
    // A zone index does not change the address.
    ['fe80::1%eth0', false],
    ['2606:4700::1111', true],
  ];

  it('allows exactly the globally reachable IPv4 addresses, at each range’s edges', () => {
    for (const [address, reachable] of IPV4_EDGES) {
      expect(isGloballyReachable(address), address).to.equal(reachable);
      expect(isForbiddenAddress(address), address).to.equal(!reachable);
    }
  });

  it('allows only global unicast IPv6 outside the special-purpose blocks, at each range’s edges', () => {
    for (const [address, reachable] of IPV6_EDGES) {
      expect(isGloballyReachable(address), address).to.equal(reachable);
    }
  });

  it('refuses anything that is not an IP address', () => {
    for (const text of ['not-an-ip', '', '2130706433', '127.1', '1.2.3.4.5', '[::1]']) {
      expect(isForbiddenAddress(text), text).to.equal(true);
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
