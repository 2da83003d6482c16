/** `value` with every object and array in it frozen (JSON values: no cycles), itself returned. */
export function frozenThrough<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) frozenThrough(inner);
    Object.freeze(value);
  }
  return value;
}
