/**
 * Routing inside the page, on the URL hash (`#/p/app/test/c/notes?filter[a]=1`), so the server
 * serves one page and the back button, bookmarks and reloads all work.
 */
import { useEffect, useState } from 'preact/hooks';

function decode(segment) {
  try {
    return decodeURIComponent(segment);
  } catch {
    return segment;
  }
}

export function parseHash(hash) {
  const raw = hash.replace(/^#/, '') || '/';
  const mark = raw.indexOf('?');
  const path = mark === -1 ? raw : raw.slice(0, mark);
  const query = new URLSearchParams(mark === -1 ? '' : raw.slice(mark + 1));
  const segments = path.split('/').filter(Boolean).map(decode);
  return { path, segments, query };
}

export function useRoute() {
  const [route, setRoute] = useState(() => parseHash(window.location.hash));
  useEffect(() => {
    const changed = () => setRoute(parseHash(window.location.hash));
    window.addEventListener('hashchange', changed);
    return () => window.removeEventListener('hashchange', changed);
  }, []);
  return route;
}

/** `href('p', 'my app', 'keys')` → `#/p/my%20app/keys`; an optional URLSearchParams last. */
export function href(...parts) {
  const last = parts[parts.length - 1];
  const query = last instanceof URLSearchParams ? parts.pop() : null;
  const path = `#/${parts.map((part) => encodeURIComponent(String(part))).join('/')}`;
  const search = query ? query.toString() : '';
  return search ? `${path}?${search}` : path;
}

export function navigate(target) {
  window.location.hash = target.replace(/^#/, '');
}
