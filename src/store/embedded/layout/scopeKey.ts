/** How a data scope is written in the embedded store's `scope` columns: `<projectId>:<env>`. */
import type { DataScope } from '../../port.js';

export function scopeKeyOf(scope: DataScope): string {
  return `${scope.projectId}:${scope.env}`;
}

/** The scope a `scope` column names (the env never contains `:`, so the last one splits). */
export function scopeFromKey(key: string): DataScope {
  const colon = key.lastIndexOf(':');
  const env = key.slice(colon + 1);
  if (colon < 0 || (env !== 'live' && env !== 'test')) throw new Error(`malformed scope key "${key}"`);
  return { projectId: key.slice(0, colon), env };
}
