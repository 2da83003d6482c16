/** The worst collection schema a hostile tenant can set, for the reliability suite and its bench. */

/**
 * Both catastrophic-backtracking patterns Folio must run in linear time, an enum of 1,000
 * objects, and `deep`: the schema's nested part (each user builds it to its own depth).
 */
export function hostileSchema(deep: unknown) {
  return {
    type: 'object',
    properties: {
      s: { type: 'string', pattern: '^(a+)+$' },
      t: { type: 'string', pattern: '^(a|aa)+$' },
      e: { enum: Array.from({ length: 1000 }, (_, i) => ({ k: i, v: [i, `${i}`] })) },
      deep,
    },
  };
}
