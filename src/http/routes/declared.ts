/**
 * The declaration of the route a request matched, for middleware that runs before the route's
 * own (router param handlers: authenticate, readOnlyCheck): what it accepts, who may call it.
 * `route` records each declaration under its operationId, the name it gives the route.
 */
import type { OperationDeclaration } from '../openapi/declare.js';
import type { Ctx } from '../types.js';

const declared = new Map<string, OperationDeclaration>();

export function recordDeclaration(op: OperationDeclaration): void {
  declared.set(op.operationId, op);
}

export function declarationOf(ctx: Ctx): OperationDeclaration {
  const op = ctx.routerName === undefined ? undefined : declared.get(ctx.routerName);
  if (!op) throw new Error(`no declaration for route ${ctx.routerName}`);
  return op;
}
