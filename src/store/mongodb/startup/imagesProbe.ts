/**
 * Proof, at start-up, that the deployment records change-stream pre- and post-images. The binary
 * version is not enough: a 6.x server still at an older featureCompatibilityVersion refuses the
 * option, and without this check it would refuse it at each collection's first write (a 500).
 * So `init()` creates a throw-away collection with the option on, checks it took, and drops it.
 */
import { randomBytes } from 'node:crypto';
import type { Db, Document } from 'mongodb';
import { StoreStartError } from '../../port.js';
import { collectionRepair } from '../layout/collections.js';
import { DOCUMENT_COLLECTION_OPTIONS } from '../layout/indexes.js';

/** Probe collections are named `<this>.<random>`; a crash can leave one behind, harmlessly. */
export const IMAGES_PROBE_PREFIX = '_folio.imagesProbe';

/** The `featureCompatibilityVersion` in a `getParameter` reply, if it holds one. */
export function featureCompatibilityVersion(reply: Document): string | null {
  const fcv: unknown = reply.featureCompatibilityVersion;
  const version: unknown = typeof fcv === 'object' && fcv !== null ? (fcv as Document).version : fcv;
  return typeof version === 'string' ? version : null;
}

/** Why the probe failed, and what to do, in one message. */
export function imagesRefusedMessage(error: unknown, fcv: string | null): string {
  const detail = error instanceof Error ? error.message : String(error);
  const code: unknown = (error as { code?: unknown } | null)?.code;
  if (code === 13) {
    return (
      `The MongoDB user in MONGODB_URI may not create collections in Folio's system database (${detail}). ` +
      'Grant the roles readWriteAnyDatabase and dbAdminAnyDatabase; see docs/mongodb.md.'
    );
  }
  const version = fcv ? ` The server's featureCompatibilityVersion is ${fcv}.` : '';
  return (
    `MongoDB refused change-stream pre- and post-images (${detail}).${version} Folio needs them ` +
    '(featureCompatibilityVersion 6.0 or later): once the whole deployment runs 6.0 or later, run ' +
    'db.adminCommand({setFeatureCompatibilityVersion: "6.0", confirm: true}) (or the version it runs).'
  );
}

export async function proveImages(db: Db, admin: Db): Promise<void> {
  const name = `${IMAGES_PROBE_PREFIX}.${randomBytes(6).toString('hex')}`;
  let refused: unknown = null;
  try {
    await db.createCollection(name, DOCUMENT_COLLECTION_OPTIONS);
    const [info] = await db.listCollections({ name }).toArray();
    if (collectionRepair(info && 'options' in info ? info : undefined) !== 'none') {
      refused = new Error('the collection was created without them');
    }
  } catch (error) {
    refused = error;
  } finally {
    await db.dropCollection(name).catch(() => {});
  }
  if (refused === null) return;
  const fcv = await admin
    .command({ getParameter: 1, featureCompatibilityVersion: 1 })
    .then(featureCompatibilityVersion, () => null);
  throw new StoreStartError(imagesRefusedMessage(refused, fcv), { cause: refused });
}
