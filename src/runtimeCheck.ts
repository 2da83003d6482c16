/**
 * Whether this Node.js parses JSON object keys faithfully. V8 in Node.js 23, 24.0 to 24.21 and
 * 25 (25.0 to 25.9, the newest tried) can answer, for a key written with an escape sequence, a
 * different key it parsed earlier: after `{"a\\": 1}` (the key `a\`), `{"a\n": 1}` can come back
 * with the key `a\` instead of `a` and a newline. Folio parses every body with JSON.parse, so on
 * such a runtime it could store a field under another field's name, silently. Node.js 20, 22
 * and 24.22.1 onwards parse them right.
 *
 * Whether a given pair collides depends on what the process parsed before (the same probe that
 * fails in a fresh process passes once a loader has parsed its own JSON), so a passing probe
 * proves nothing: the versions known to be affected are refused by number, and the probe
 * catches a version not listed here that shows the fault.
 */

/** The release lines and versions known to have the fault (tried: 23.0.0, 23.11.0, 24.0.0, 24.18.1, 24.19.0, 24.21.0, 25.0.0, 25.9.0). */
export function knownFaultyJsonParse(version: string): boolean {
  const match = /^v?(\d+)\.(\d+)\.(\d+)/.exec(version);
  if (!match) return false;
  const [major, minor, patch] = [Number(match[1]), Number(match[2]), Number(match[3])];
  if (major === 23) return true;
  // Fixed in 24.22.1.
  if (major === 24) return minor < 22 || (minor === 22 && patch < 1);
  if (major === 25) return minor <= 9;
  return false;
}

/** [a key written with an escape, parsed first; a different key, parsed after it], as JSON text. */
const PROBES: ReadonlyArray<readonly [string, string]> = [
  ['a\\\\', 'a\\n'],
  ['folio-probe\\\\', 'folio-probe\\n'],
];

/** Whether `parse` (JSON.parse by default) gives every probe's second key as written. */
export function jsonParseKeepsKeys(parse: (text: string) => unknown = JSON.parse): boolean {
  for (const [first, second] of PROBES) {
    parse(`{"${first}":1}`);
    const keys = Object.keys(parse(`{"${second}":1}`) as object);
    // What the key's text says, decoded by hand: the second keys' one escape is \n.
    if (keys.length !== 1 || keys[0] !== second.replace('\\n', '\n')) return false;
  }
  return true;
}

/** Set to `true` to start anyway on a runtime whose JSON.parse is known or seen to be faulty. */
export const UNSAFE_RUNTIME_VARIABLE = 'FOLIO_ALLOW_FAULTY_JSON_PARSE';

/** Why Folio will not run on this runtime, or null when it may. */
export function runtimeRefusal(
  env: NodeJS.ProcessEnv,
  version: string = process.version,
  keepsKeys: () => boolean = jsonParseKeepsKeys,
): string | null {
  if (env[UNSAFE_RUNTIME_VARIABLE] === 'true') return null;
  if (!knownFaultyJsonParse(version) && keepsKeys()) return null;
  return (
    `Node.js ${version} parses some JSON object keys wrongly (a key written with an escape, such as "a\\n", ` +
    'can come back as another key parsed before it), so Folio could store fields under the wrong names. ' +
    'Use Node.js 20, 22, 24.22.1 or a later 24, or 25.10 or later. ' +
    `To run anyway, at that risk, set ${UNSAFE_RUNTIME_VARIABLE}=true.`
  );
}
