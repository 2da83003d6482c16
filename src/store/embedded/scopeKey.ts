/** How a data scope is written in the embedded store's `scope` columns. */
import type { DataScope } from '../port.js';

export function scopeKeyOf(scope: DataScope): string {
  return `${scope.projectId}:${scope.env}`;
}
