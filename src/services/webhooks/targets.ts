/**
 * Where a webhook may send: http(s) URLs whose host is a globally reachable address (server-side
 * request forgery). Checked at registration and again when connecting, on the addresses the
 * name resolves to then, so a name that later resolves to a private address is refused too.
 * `webhooks.allowPrivateTargets` lifts the address rule (tests, private networks).
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP } from 'node:net';

/**
 * What the addresses of a range are: globally reachable, not, or judged by the IPv4 address
 * they carry (in their last 32 bits, or in bits 16-47 for 6to4).
 */
type Reach = 'global' | 'local' | 'ipv4Tail' | 'ipv4In6to4';

/**
 * The IANA IPv4 Special-Purpose Address Registry's blocks that are not globally reachable, and
 * multicast (its own registry). The rest of the space is allocated unicast.
 */
const IPV4_RANGES: ReadonlyArray<readonly [string, Reach]> = [
  ['0.0.0.0/0', 'global'],
  ['0.0.0.0/8', 'local'], // "this network"
  ['10.0.0.0/8', 'local'], // private
  ['100.64.0.0/10', 'local'], // carrier-grade NAT
  ['127.0.0.0/8', 'local'], // loopback
  ['169.254.0.0/16', 'local'], // link-local, cloud metadata (169.254.169.254)
  ['172.16.0.0/12', 'local'], // private
  ['192.0.0.0/24', 'local'], // IETF protocol assignments
  ['192.0.0.9/32', 'global'], // PCP anycast
  ['192.0.0.10/32', 'global'], // TURN anycast
  ['192.0.2.0/24', 'local'], // documentation
  ['192.88.99.0/24', 'local'], // 6to4 relay anycast (deprecated)
  ['192.168.0.0/16', 'local'], // private
  ['198.18.0.0/15', 'local'], // benchmarking
  ['198.51.100.0/24', 'local'], // documentation
  ['203.0.113.0/24', 'local'], // documentation
  ['224.0.0.0/4', 'local'], // multicast
  ['240.0.0.0/4', 'local'], // reserved
  ['255.255.255.255/32', 'local'], // limited broadcast
];

/**
 * IPv6: only global unicast (2000::/3) minus the IANA IPv6 Special-Purpose Address Registry's
 * blocks in it that are not globally reachable. Nothing outside 2000::/3 matches but the two
 * IPv4 embeddings, so a form nobody listed (site-local, the rest of ::/8, segment routing's
 * 5f00::/16) is refused.
 */
const IPV6_RANGES: ReadonlyArray<readonly [string, Reach]> = [
  ['2000::/3', 'global'], // global unicast
  ['2001::/23', 'local'], // IETF protocol assignments: Teredo (2001::/32), benchmarking, ORCHID
  ['2001:1::1/128', 'global'], // PCP anycast
  ['2001:1::2/128', 'global'], // TURN anycast
  ['2001:1::3/128', 'global'], // DNS-SD SRP anycast
  ['2001:3::/32', 'global'], // AMT
  ['2001:4:112::/48', 'global'], // AS112-v6
  ['2001:20::/28', 'global'], // ORCHIDv2
  ['2001:30::/28', 'global'], // drone remote ID tags
  ['2001:db8::/32', 'local'], // documentation
  ['2002::/16', 'ipv4In6to4'], // 6to4
  ['3fff::/20', 'local'], // documentation
  ['::ffff:0:0/96', 'ipv4Tail'], // IPv4-mapped
  ['64:ff9b::/96', 'ipv4Tail'], // NAT64 well-known prefix
];

interface Range {
  readonly first: bigint;
  readonly last: bigint;
  readonly reach: Reach;
}

/** Longest prefix first, so the first range holding an address is the most specific. */
function compile(table: ReadonlyArray<readonly [string, Reach]>, bits: number): Range[] {
  return table
    .map(([cidr, reach]) => {
      const [net = '', length = ''] = cidr.split('/');
      const prefix = Number(length);
      const first = addressValue(net) as bigint;
      return { prefix, first, last: first + (1n << BigInt(bits - prefix)) - 1n, reach };
    })
    .sort((a, b) => b.prefix - a.prefix);
}

const IPV4 = compile(IPV4_RANGES, 32);
const IPV6 = compile(IPV6_RANGES, 128);

/** The eight 16-bit groups of an IPv6 address (any spelling, dotted IPv4 tail included). */
function ipv6Groups(address: string): number[] | null {
  if (isIP(address) !== 6) return null;
  let text = address.toLowerCase();
  const zone = text.indexOf('%');
  if (zone >= 0) text = text.slice(0, zone);
  const dotted = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  if (dotted) {
    const [a, b, c, d] = dotted.slice(1).map(Number) as [number, number, number, number];
    text = `${text.slice(0, dotted.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`;
  }
  const [head = '', tail] = text.split('::') as [string, string | undefined];
  const part = (s: string) => (s === '' ? [] : s.split(':').map((g) => Number.parseInt(g, 16)));
  const left = part(head);
  const right = tail === undefined ? [] : part(tail);
  const fill = tail === undefined ? 0 : 8 - left.length - right.length;
  const groups = [...left, ...new Array<number>(fill).fill(0), ...right];
  return groups.length === 8 && groups.every((g) => Number.isInteger(g) && g >= 0 && g <= 0xffff)
    ? groups
    : null;
}

/** An IP address as a number (32 or 128 bits); null when it is not one. */
function addressValue(address: string): bigint | null {
  if (isIP(address) === 4) {
    return address.split('.').reduce((value, octet) => (value << 8n) | BigInt(octet), 0n);
  }
  const groups = ipv6Groups(address);
  return groups ? groups.reduce((value, group) => (value << 16n) | BigInt(group), 0n) : null;
}

function reachOf(value: bigint, ranges: Range[]): Reach {
  return ranges.find((r) => value >= r.first && value <= r.last)?.reach ?? 'local';
}

/** True when an address is globally reachable; anything that is not an IP address is not. */
export function isGloballyReachable(address: string): boolean {
  const value = addressValue(address);
  if (value === null) return false;
  if (isIP(address) === 4) return reachOf(value, IPV4) === 'global';
  const reach = reachOf(value, IPV6);
  if (reach === 'ipv4Tail') return reachOf(value & 0xffffffffn, IPV4) === 'global';
  if (reach === 'ipv4In6to4') return reachOf((value >> 80n) & 0xffffffffn, IPV4) === 'global';
  return reach === 'global';
}

/** True for an address a webhook may not reach. */
export function isForbiddenAddress(address: string): boolean {
  return !isGloballyReachable(address);
}

/** Why a target is refused; the message is safe to show (no header, body or secret). */
export class TargetRefusedError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TargetRefusedError';
  }
}

/** The host of a URL as an IP literal (brackets stripped), or null when it is a name. */
export function literalAddress(url: URL): string | null {
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return isIP(host) ? host : null;
}

/** Refuses a URL whose host is an IP literal in a forbidden range. */
export function assertLiteralAllowed(url: URL): void {
  const literal = literalAddress(url);
  if (literal !== null && isForbiddenAddress(literal)) {
    throw new TargetRefusedError(
      'the URL points to an address that is not globally reachable (private, loopback, link-local or special-purpose)',
    );
  }
}

/**
 * Resolves a host name to every address it has. Production uses `systemLookup` (the operating
 * system's resolver, as `dns.lookup`) and never another; tests pass their own so that a name can
 * resolve to a chosen address at registration and another at send time (DNS rebinding).
 */
export type HostLookup = (hostname: string, family: 0 | 4 | 6) => Promise<LookupAddress[]>;

export const systemLookup: HostLookup = (hostname, family) =>
  new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true, verbatim: true, family }, (error, addresses) => {
      if (error) reject(error);
      else resolve(addresses);
    });
  });

/** Resolve the URL's host now and refuse it if any address it resolves to is forbidden. */
export async function assertResolvesPublic(url: URL, lookup: HostLookup = systemLookup): Promise<void> {
  assertLiteralAllowed(url);
  if (literalAddress(url) !== null) return;
  let addresses: LookupAddress[];
  try {
    addresses = await lookup(url.hostname, 0);
  } catch {
    throw new TargetRefusedError(`the host ${url.hostname} does not resolve`);
  }
  if (addresses.length === 0 || addresses.some((a) => isForbiddenAddress(a.address))) {
    throw new TargetRefusedError(
      `the host ${url.hostname} resolves to a private, loopback or link-local address`,
    );
  }
}

type LookupCallback = (
  error: NodeJS.ErrnoException | null,
  address: string | LookupAddress[],
  family?: number,
) => void;

/** The `lookup` option of a socket connection, over a `HostLookup`. */
export type SocketLookup = (hostname: string, options: LookupOptions, callback: LookupCallback) => void;

const familyOf = (options: LookupOptions): 0 | 4 | 6 =>
  options.family === 4 || options.family === 'IPv4'
    ? 4
    : options.family === 6 || options.family === 'IPv6'
      ? 6
      : 0;

/** `lookup` as is, in the shape sockets call it (private targets allowed). */
export function socketLookup(lookup: HostLookup): SocketLookup {
  return (hostname, options, callback) => {
    lookup(hostname, familyOf(options)).then(
      (addresses) => answer(addresses, options, callback),
      (error: NodeJS.ErrnoException) => callback(error, []),
    );
  };
}

/**
 * A `lookup` for socket connections that refuses forbidden addresses: the check runs on the
 * very addresses the socket then connects to, so DNS cannot change between check and use. The
 * reason names the refused address: it is the account's own URL, and seeing what it resolved
 * to at that moment is what tells a rebinding name from a misconfigured one.
 */
export function guardedLookup(lookup: HostLookup = systemLookup): SocketLookup {
  return (hostname, options, callback) => {
    lookup(hostname, familyOf(options)).then(
      (addresses) => {
        const forbidden = addresses.find((a) => isForbiddenAddress(a.address));
        if (addresses.length === 0 || forbidden) {
          const refused: NodeJS.ErrnoException = new TargetRefusedError(
            forbidden
              ? `the host ${hostname} resolved to ${forbidden.address}, a private, loopback or link-local address`
              : `the host ${hostname} resolved to no address`,
          );
          refused.code = 'ETARGETREFUSED';
          return callback(refused, []);
        }
        return answer(addresses, options, callback);
      },
      (error: NodeJS.ErrnoException) => callback(error, []),
    );
  };
}

function answer(addresses: LookupAddress[], options: LookupOptions, callback: LookupCallback): void {
  if (addresses.length === 0) {
    const none: NodeJS.ErrnoException = new Error('no address');
    none.code = 'ENOTFOUND';
    callback(none, []);
  } else if (options.all) {
    callback(null, addresses);
  } else {
    const first = addresses[0] as LookupAddress;
    callback(null, first.address, first.family);
  }
}
