// @microsoft/fetch-event-source on its default settings, in a plain `node` process of its own:
// the runtime's built-in fetch (not the undici package the test process loads), no onerror,
// no onclose, no fetch of its own. Usage: node fetchEventSourceChild.mjs <url> <key>.
// Writes one JSON line per message it hands the application, and one if it stops.
import { fetchEventSource } from '@microsoft/fetch-event-source';

// It is written for browsers: it reads `window` for its timers and `document` for visibility.
globalThis.window ??= globalThis;
globalThis.document ??= { hidden: false, addEventListener() {}, removeEventListener() {} };

const [url, key] = process.argv.slice(2);
const print = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);

fetchEventSource(url, {
  headers: { Authorization: `Bearer ${key}` },
  onmessage: (m) => print({ event: m.event, id: m.id, data: m.data }),
}).then(
  () => print({ ended: 'clean end: the library stops for good' }),
  (error) => print({ ended: String(error) }),
);
