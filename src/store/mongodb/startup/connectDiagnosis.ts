/**
 * Why Folio could not connect, in one line, from what each listed host says when asked directly.
 *
 * When `init()` cannot select a server, the driver says only "Server selection timed out": with
 * `?replicaSet=rs0` a standalone server is dropped from the topology, an uninitiated `--replSet`
 * member is never selectable, and a replica set whose members are named with addresses this
 * machine cannot reach (a Docker container's hostname, typically) looks like an outage. So every
 * listed host is asked `hello` over a direct connection (hostProbe.ts), and these pure functions
 * turn the replies and errors into what is wrong and how to fix it.
 */

import type { Document } from 'mongodb';
import { ConnectionString } from 'mongodb-connection-string-url';

/** What one host answered to `hello` over a direct connection: a reply or an error. */
export interface HostProbe {
  /** `host:port`, as listed in the URI or named by a replica-set member. */
  host: string;
  reply?: Document;
  error?: unknown;
}

export type HostFinding =
  | { host: string; kind: 'authFailed' }
  | { host: string; kind: 'unreachable'; cause: string }
  | { host: string; kind: 'standalone' }
  | { host: string; kind: 'notInitiated' }
  | { host: string; kind: 'mongos' }
  | { host: string; kind: 'arbiter'; setName: string }
  | {
      host: string;
      kind: 'member';
      setName: string;
      primary: string | null;
      members: string[];
      state: string;
    };

/** At most this many hosts are probed (the URI's and those the members name). */
export const MAX_PROBES = 10;

/** URI options that make no sense for a direct connection to one host. */
const DROPPED_OPTIONS = new Set([
  'replicaset',
  'directconnection',
  'loadbalanced',
  'srvmaxhosts',
  'srvservicename',
]);

/**
 * A connection string that reaches only `host`, directly, failing fast, with every other option
 * of `uri` (credentials, TLS, authSource) kept. An SRV URI becomes a plain one with TLS on (as SRV
 * implies) and `authSource` given, since the TXT record that may have set it is not consulted.
 */
export function probeUri(uri: string, host: string, timeoutMs: number, authSource?: string): string {
  const cs = new ConnectionString(uri);
  const params = cs.typedSearchParams<Record<string, string>>();
  const srv = cs.isSRV;
  if (srv) cs.protocol = 'mongodb';
  cs.hosts = [host];
  for (const name of [...params.keys()]) {
    if (DROPPED_OPTIONS.has(name.toLowerCase())) params.delete(name);
  }
  const has = (name: string) => [...params.keys()].some((key) => key.toLowerCase() === name);
  if (srv && !has('tls') && !has('ssl')) params.set('tls', 'true');
  if (srv && authSource && !has('authsource') && cs.username) params.set('authSource', authSource);
  params.set('directConnection', 'true');
  for (const name of ['serverSelectionTimeoutMS', 'connectTimeoutMS', 'socketTimeoutMS']) {
    params.delete(name);
    params.set(name, String(timeoutMs));
  }
  return cs.toString();
}

/** Node's network error codes, in words. */
const NETWORK_CAUSES: ReadonlyMap<string, string> = new Map([
  ['ECONNREFUSED', 'connection refused: nothing listens on that port'],
  ['ENOTFOUND', 'the host name does not resolve'],
  ['EAI_AGAIN', 'the host name could not be resolved (DNS)'],
  ['ETIMEDOUT', 'connection timed out (firewall, or a wrong address)'],
  ['EHOSTUNREACH', 'no route to host'],
  ['ENETUNREACH', 'network unreachable'],
  ['ECONNRESET', 'connection reset (does the server require TLS?)'],
]);

/** Errors to look through: the error, its causes, and each server's error in a topology description. */
function errorChain(error: unknown): unknown[] {
  const chain: unknown[] = [];
  const queue: unknown[] = [error];
  // Bounded: driver errors nest a few levels at most.
  while (queue.length > 0 && chain.length < 20) {
    const current = queue.shift();
    if (typeof current !== 'object' || current === null || chain.includes(current)) continue;
    chain.push(current);
    queue.push((current as { cause?: unknown }).cause);
    const servers: unknown = (current as { reason?: { servers?: unknown } }).reason?.servers;
    if (servers instanceof Map)
      for (const server of servers.values()) queue.push((server as { error?: unknown }).error);
  }
  return chain;
}

/** The server refused the credentials (AuthenticationFailed, or a mechanism it does not offer). */
export function isAuthFailure(error: unknown): boolean {
  return errorChain(error).some((e) => {
    const { code, codeName, name } = e as { code?: unknown; codeName?: unknown; name?: unknown };
    return code === 18 || codeName === 'AuthenticationFailed' || name === 'MongoMissingCredentialsError';
  });
}

/** Why a host could not be reached, in words ("connection refused: ..."), or null if it could. */
export function networkFailure(error: unknown): string | null {
  const chain = errorChain(error);
  for (const e of chain) {
    const code: unknown = (e as { code?: unknown }).code;
    if (typeof code !== 'string') continue;
    const known = NETWORK_CAUSES.get(code);
    if (known) return `${code}: ${known}`;
    if (/^(ERR_TLS|ERR_SSL|CERT_|UNABLE_TO_|DEPTH_ZERO|SELF_SIGNED|EPROTO)/.test(code)) {
      return `TLS failed (${code}): check tls, tlsCAFile and the server's certificate`;
    }
  }
  for (const e of chain) {
    const name: unknown = (e as { name?: unknown }).name;
    if (name === 'MongoNetworkTimeoutError') return 'connection timed out (firewall, or a wrong address)';
  }
  for (const e of chain) {
    const name: unknown = (e as { name?: unknown }).name;
    if (name === 'MongoNetworkError' || name === 'MongoServerSelectionError') {
      return String((e as { message?: unknown }).message ?? 'unreachable').slice(0, 200);
    }
  }
  return null;
}

function memberState(reply: Document): string {
  if (reply.isWritablePrimary === true || reply.ismaster === true) return 'PRIMARY';
  if (reply.secondary === true) return 'SECONDARY';
  return 'neither primary nor secondary (starting up, recovering or removed)';
}

function stringList(value: unknown): string[] {
  return Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : [];
}

/** What one probe says about its host. */
export function classifyProbe(probe: HostProbe): HostFinding {
  const { host, reply } = probe;
  if (!reply) {
    if (isAuthFailure(probe.error)) return { host, kind: 'authFailed' };
    return { host, kind: 'unreachable', cause: networkFailure(probe.error) ?? 'no answer' };
  }
  if (reply.msg === 'isdbgrid') return { host, kind: 'mongos' };
  const setName = typeof reply.setName === 'string' && reply.setName !== '' ? reply.setName : null;
  if (!setName)
    return reply.isreplicaset === true ? { host, kind: 'notInitiated' } : { host, kind: 'standalone' };
  if (reply.arbiterOnly === true) return { host, kind: 'arbiter', setName };
  return {
    host,
    kind: 'member',
    setName,
    primary: typeof reply.primary === 'string' ? reply.primary : null,
    // Data-bearing members, as the replica-set configuration names them (what clients must reach).
    members: [...stringList(reply.hosts), ...stringList(reply.passives)],
    state: memberState(reply),
  };
}

/** Hosts the members name that were not probed yet, within MAX_PROBES in all. */
export function hostsToProbeNext(probes: readonly HostProbe[]): string[] {
  const probed = new Set(probes.map((p) => p.host.toLowerCase()));
  const next: string[] = [];
  for (const probe of probes) {
    const finding = classifyProbe(probe);
    if (finding.kind !== 'member') continue;
    for (const member of finding.members) {
      const key = member.toLowerCase();
      if (probed.has(key) || probes.length + next.length >= MAX_PROBES) continue;
      probed.add(key);
      next.push(member);
    }
  }
  return next;
}

const DOCKER_HINT =
  'for a single-node set in Docker, initiate it with host localhost:27017 (see docs/mongodb.md)';

/**
 * One line saying what is wrong with the deployment the URI points at, and how to fix it.
 * `expectedSet` is the URI's `replicaSet` (null when it has none).
 */
export function diagnose(probes: readonly HostProbe[], expectedSet: string | null): string {
  const findings = probes.map(classifyProbe);
  const byHost = new Map(findings.map((f) => [f.host.toLowerCase(), f]));
  const parts: string[] = [];
  const want = expectedSet ? ` "${expectedSet}"` : '';
  for (const f of findings) {
    switch (f.kind) {
      case 'authFailed':
        parts.push(
          `${f.host} refused the credentials in MONGODB_URI (check the user, password and authSource)`,
        );
        break;
      case 'unreachable':
        // Members the seed named are reported with the set, below; a seed on its own here.
        if (
          !findings.some(
            (m) => m.kind === 'member' && m.members.some((n) => n.toLowerCase() === f.host.toLowerCase()),
          )
        ) {
          parts.push(`${f.host} is unreachable (${f.cause})`);
        }
        break;
      case 'standalone':
        parts.push(
          `${f.host} is a standalone mongod, not a replica-set member${expectedSet ? `, but MONGODB_URI asks for replica set${want}` : ''}: ` +
            `Folio needs a replica set (start mongod with --replSet ${expectedSet ?? 'rs0'} and run rs.initiate() once)`,
        );
        break;
      case 'notInitiated':
        parts.push(
          `${f.host} was started with --replSet but the replica set was never initiated: run rs.initiate() once (${DOCKER_HINT})`,
        );
        break;
      case 'mongos':
        parts.push(
          expectedSet
            ? `${f.host} is a mongos router (a sharded cluster): remove replicaSet=${expectedSet} from MONGODB_URI`
            : `${f.host} is a mongos router that could not be used`,
        );
        break;
      case 'arbiter':
        parts.push(
          `${f.host} is an arbiter of replica set "${f.setName}" and holds no data: list data-bearing members`,
        );
        break;
      case 'member': {
        if (expectedSet && f.setName !== expectedSet) {
          parts.push(
            `${f.host} belongs to replica set "${f.setName}", not${want}: set replicaSet=${f.setName} in MONGODB_URI`,
          );
          break;
        }
        const unreachable = f.members.filter((m) => byHost.get(m.toLowerCase())?.kind === 'unreachable');
        if (unreachable.length > 0) {
          const cause = (byHost.get(unreachable[0]!.toLowerCase()) as { cause?: string }).cause;
          parts.push(
            `replica set "${f.setName}" names its members ${f.members.join(', ')}, and this machine cannot reach ` +
              `${unreachable.join(', ')} (${cause}): clients connect to every member by the name in the ` +
              `replica-set configuration, so make those names reachable or reconfigure the members (${DOCKER_HINT})`,
          );
        } else if (!f.primary) {
          parts.push(
            `replica set "${f.setName}" has no primary right now (an election is under way, or too few members are up); ${f.host} is ${f.state}`,
          );
        }
        break;
      }
    }
  }
  return [...new Set(parts)].join('; ');
}
