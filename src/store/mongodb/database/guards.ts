/**
 * Guard documents: a bounded create ("insert unless N already exist") runs in a transaction,
 * but snapshot isolation alone lets two such transactions each count N − 1 and both insert.
 * Each first writes the guard document of what it counts, so racing transactions meet a write
 * conflict; the loser starts over (inTransaction) and counts again after the winner committed.
 */
import type { ClientSession, Collection } from 'mongodb';
import type { DataScope } from '../../port.js';

export interface GuardDoc {
  _id: string;
  value: string;
}

/**
 * The guard of one counted set. Parts are joined by NUL, which no id, environment or
 * collection name holds, so two sets never share a guard.
 */
export function guardId(
  of:
    | { kind: 'webhooks' | 'indexes'; scope: DataScope; collection: string }
    | { kind: 'activeKeys'; projectId: string },
): string {
  const parts =
    of.kind === 'activeKeys'
      ? ['activeKeyGuard', of.projectId]
      : [
          `${of.kind === 'webhooks' ? 'webhook' : 'index'}Guard`,
          of.scope.projectId,
          of.scope.env,
          of.collection,
        ];
  return parts.join('\u0000');
}

/** Write the guard within `session`'s transaction (`writer` names who wrote it last). */
async function takeGuard(
  settings: Collection<GuardDoc>,
  id: string,
  writer: string,
  session: ClientSession,
): Promise<void> {
  await settings.updateOne({ _id: id }, { $set: { value: writer } }, { upsert: true, session });
}

/**
 * One bounded create inside `session`'s transaction: take the set's guard, count the set, and
 * insert only while it holds fewer than `max`; otherwise abort and answer false.
 */
export async function insertWhileBelow(
  session: ClientSession,
  guard: { settings: Collection<GuardDoc>; id: string; writer: string },
  max: number,
  count: () => Promise<number>,
  insert: () => Promise<unknown>,
): Promise<boolean> {
  await takeGuard(guard.settings, guard.id, guard.writer, session);
  if ((await count()) >= max) {
    await session.abortTransaction();
    return false;
  }
  await insert();
  return true;
}
