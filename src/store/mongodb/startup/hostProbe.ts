/**
 * Asking each host of a deployment `hello` over a direct connection, after the driver could not
 * select a server: the input of connectDiagnosis.ts. Each probe is its own short-lived client
 * with short timeouts, so a diagnosis costs a few seconds at most.
 */
import { MongoClient, MongoServerSelectionError, type ServerHeartbeatFailedEvent } from 'mongodb';
import {
  diagnose,
  type HostProbe,
  hostsToProbeNext,
  isAuthFailure,
  MAX_PROBES,
  probeUri,
} from './connectDiagnosis.js';

/** Time each probe may take to connect and answer. */
export const PROBE_TIMEOUT_MS = 3_000;

export async function probeHost(
  uri: string,
  host: string,
  timeoutMs: number,
  authSource?: string,
): Promise<HostProbe> {
  let client: MongoClient;
  try {
    client = new MongoClient(probeUri(uri, host, timeoutMs, authSource), { appName: 'folio-probe' });
  } catch (error) {
    return { host, error };
  }
  try {
    // A direct connection selects the host whatever its state, so `hello` runs (and the pool's
    // handshake authenticates: bad credentials fail here). A host that cannot be reached fails
    // the monitor's first check at once; no need to wait for server selection to time out.
    const unreachable = new Promise<never>((_, reject) => {
      client.once('serverHeartbeatFailed', (event: ServerHeartbeatFailedEvent) => reject(event.failure));
    });
    const hello = client.db('admin').command({ hello: 1 });
    hello.catch(() => {});
    unreachable.catch(() => {});
    return { host, reply: await Promise.race([hello, unreachable]) };
  } catch (error) {
    return { host, error };
  } finally {
    await client.close().catch(() => {});
  }
}

/** The listed hosts, then those the members name that were not listed. */
export async function probeDeployment(
  uri: string,
  seeds: readonly string[],
  timeoutMs: number,
  authSource?: string,
): Promise<HostProbe[]> {
  const probe = (host: string) => probeHost(uri, host, timeoutMs, authSource);
  const probes = await Promise.all([...new Set(seeds)].slice(0, MAX_PROBES).map(probe));
  probes.push(...(await Promise.all(hostsToProbeNext(probes).map(probe))));
  return probes;
}

/**
 * One line for a failed `client.connect()`: what the hosts say when asked directly, or the
 * driver's own message when they say nothing more useful.
 */
export async function diagnoseConnectFailure(
  client: MongoClient,
  uri: string,
  error: unknown,
): Promise<string> {
  const prefix = 'cannot connect to MongoDB: ';
  const driverMessage = error instanceof Error ? error.message : String(error);
  if (isAuthFailure(error)) {
    return `MongoDB refused the credentials in the URI (check the user, password and authSource): ${driverMessage}`;
  }
  if (!(error instanceof MongoServerSelectionError)) return prefix + driverMessage;
  const seeds = client.options.hosts.map(String);
  const servers: unknown = error.reason?.servers;
  if (servers instanceof Map) for (const address of servers.keys()) seeds.push(String(address));
  // Never slower than the selection timeout the operator chose.
  const timeoutMs = Math.min(PROBE_TIMEOUT_MS, client.options.serverSelectionTimeoutMS);
  const probes = await probeDeployment(uri, seeds, timeoutMs, client.options.credentials?.source);
  const expectedSet = client.options.replicaSet ?? null;
  const diagnosis = diagnose(probes, expectedSet || null);
  return prefix + (diagnosis || driverMessage);
}
