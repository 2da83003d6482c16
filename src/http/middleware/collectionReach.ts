/**
 * `/{ns}/{collection}/...` routes: a valid collection name (400), then the key's rules must
 * reach the collection (services/keyAccess.ts) at the access the route's declaration needs:
 * 404 out of reach, whether or not the collection exists; 403 `collection_access` when the key
 * sees it but may not write. Runs as the router's `collection` param handler, after the `ns`
 * one authenticated the key, so no route repeats the check.
 */
import type { Next } from 'koa';
import { assertCollectionName } from '../../services/documentRules.js';
import { requireCollection } from '../../services/keyAccess.js';
import type { OperationDeclaration } from '../openapi/declare.js';
import { declarationOf } from '../routes/declared.js';
import { type Ctx, keyOf } from '../types.js';

/** The access a route needs on its collection: reading routes are those a read-only key may call. */
export function neededAccess(op: OperationDeclaration): 'read' | 'write' | 'every document' {
  return op.collectionAccess ?? ((op.readOnlyKeys ?? op.method === 'get') ? 'read' : 'write');
}

export function collectionReach(): (collection: string, ctx: Ctx, next: Next) => unknown {
  return (collection, ctx, next) => {
    assertCollectionName(collection);
    const { access } = keyOf(ctx);
    if (access.restricted) requireCollection(access, collection, neededAccess(declarationOf(ctx)));
    return next();
  };
}
