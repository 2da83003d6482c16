/**
 * Where a webhook may send: http(s) URLs whose host is not a private, loopback, link-local,
 * metadata or otherwise non-public address (server-side request forgery). Checked at
 * registration and again when connecting, on the addresses the name resolves to then, so a name
 * that later resolves to a private address is refused too. `webhooks.allowPrivateTargets` lifts
 * the address rule (tests, private networks).
 */
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { BlockList, isIP } from 'node:net';

/** Ranges a webhook may not reach (IANA special-purpose registries, both families). */
const FORBIDDEN = new BlockList();
for (const [net, prefix] of [
  ['0.0.0.0', 8], // "this" network
  ['10.0.0.0', 8], // private
  ['100.64.0.0', 10], // carrier-grade NAT
  ['127.0.0.0', 8], // loopback
  ['169.254.0.0', 16], // link-local, cloud metadata (169.254.169.254)
  ['172.16.0.0', 12], // private
  ['192.0.0.0', 24], // IETF protocol assignments
  ['192.0.2.0', 24], // documentation
  ['192.88.99.0', 24], // 6to4 relay
  ['192.168.0.0', 16], // private
  ['198.18.0.0', 15], // benchmarking
  ['198.51.100.0', 24], // documentation
  ['203.0.113.0', 24], // documentation
  ['224.0.0.0', 4], // multicast
  ['240.0.0.0', 4], // reserved, broadcast
] as const) {
  FORBIDDEN.addSubnet(net, prefix, 'ipv4');
}
for (const [net, prefix] of [
  ['::', 128], // unspecified
  ['::1', 128], // loopback
  ['64:ff9b::', 96], // NAT64 (embeds IPv4); checked through its IPv4 part below as well
  ['64:ff9b:1::', 48], // local-use NAT64 (RFC 8215): never a public destination
  ['100::', 64], // discard
  ['2001:db8::', 32], // documentation
  ['fc00::', 7], // unique local (incl. fd00:ec2::254, a metadata address)
  ['fe80::', 10], // link-local
  ['ff00::', 8], // multicast
] as const) {
  FORBIDDEN.addSubnet(net, prefix, 'ipv6');
}

/** The eight 16-bit groups of an IPv6 address (any spelling, dotted IPv4 tail included). */
export function ipv6Groups(address: string): number[] | null {
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

const v4 = (high: number, low: number) => `${high >> 8}.${high & 255}.${low >> 8}.${low & 255}`;

/**
 * The IPv4 addresses an IPv6 address carries, by every standard embedding: IPv4-mapped
 * (`::ffff:0:0/96`), IPv4-translated (`::ffff:0:0:0/96`), IPv4-compatible (`::/96`), NAT64
 * (`64:ff9b::/96`) and 6to4 (`2002::/16`, the IPv4 in bits 16-47). The address is refused when
 * any of them is; a public IPv4 behind a public embedding is judged as that IPv4.
 */
export function embeddedIpv4(address: string): string[] {
  const g = ipv6Groups(address);
  if (!g) return [];
  const found: string[] = [];
  const zeros = (from: number, to: number) => g.slice(from, to).every((x) => x === 0);
  const last = v4(g[6] as number, g[7] as number);
  if (zeros(0, 5) && g[5] === 0xffff) found.push(last); // mapped
  if (zeros(0, 4) && g[4] === 0xffff && g[5] === 0) found.push(last); // translated
  if (zeros(0, 6)) found.push(last); // compatible (also :: and ::1)
  if (g[0] === 0x64 && g[1] === 0xff9b && zeros(2, 6)) found.push(last); // NAT64
  if (g[0] === 0x2002) found.push(v4(g[1] as number, g[2] as number)); // 6to4
  return found;
}

/** True for an address a webhook may not reach; anything that is not an IP address counts. */
export function isForbiddenAddress(address: string): boolean {
  const family = isIP(address);
  if (family === 4) return FORBIDDEN.check(address, 'ipv4');
  if (family !== 6) return true;
  if (FORBIDDEN.check(address, 'ipv6')) return true;
  return embeddedIpv4(address).some((ipv4) => FORBIDDEN.check(ipv4, 'ipv4'));
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
    throw new TargetRefusedError('the URL points to a private, loopback or link-local address');
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
