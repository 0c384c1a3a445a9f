/**
 * The backends a built-in handler may call (ImagePolicyWebhook's `url`): only URLs under an entry of
 * the admin's `--handler-backends`, so a suite author, who names the URL, cannot make the operator
 * probe the network for them. Owns the list's syntax, its matching, and how every thread learns it
 * (see HANDLER_BACKENDS_ENV); knows nothing of any handler's config.
 */

/**
 * The variable the list travels in (and the flag's, read by config.ts as every flag's). The list is
 * the process's: the operator sets it once at start, before any worker thread starts, and the threads
 * that compile suites (the admission thread, the review workers) inherit it through the environment a
 * Worker copies when it starts, so every thread checks against the same list without a message carrying it.
 */
export const HANDLER_BACKENDS_ENV = 'PORTCULLIS_HANDLER_BACKENDS';

/** One entry: an https origin and a path under it, as the WHATWG URL parser normalizes them. */
interface Entry {
  origin: string;
  path: string;
}

/**
 * The entries of a comma-separated list, or the reason one is not an entry. Each is an https URL
 * with no user, query or fragment: `https://image-review.security.svc:8443/review` allows that
 * host and port and the paths at or below /review; `https://host` (or `https://host/`) every path.
 */
export function parseBackends(list: string): { entries: string[] } | { error: string } {
  const entries: string[] = [];
  for (const item of list.split(',').map((s) => s.trim())) {
    if (item === '') continue;
    let url: URL;
    try {
      url = new URL(item);
    } catch {
      return { error: `${JSON.stringify(item)} is not a URL` };
    }
    if (url.protocol !== 'https:') return { error: `${JSON.stringify(item)} is not an https URL` };
    if (url.username || url.password || url.search || url.hash) return { error: `${JSON.stringify(item)} must have no user, query or fragment` };
    entries.push(url.href);
  }
  return { entries };
}

/** Sets the process's list (the operator, at start: before it starts a thread). */
export function setHandlerBackends(entries: readonly string[]): void {
  process.env[HANDLER_BACKENDS_ENV] = entries.join(',');
}

/** The process's list; a malformed one (never set by the operator, which checked it) allows nothing. */
export function handlerBackends(): string[] {
  const parsed = parseBackends(process.env[HANDLER_BACKENDS_ENV] ?? '');
  return 'entries' in parsed ? parsed.entries : [];
}

function entryOf(href: string): Entry {
  const url = new URL(href);
  return { origin: url.origin, path: url.pathname.endsWith('/') ? url.pathname : `${url.pathname}/` };
}

/**
 * Whether `url` is under an entry of the process's list: the same scheme, host and port (after
 * the URL parser's normalization: case, default port, IPv4 forms), and a path at or below the
 * entry's, segment by segment (`/review` allows `/review` and `/review/v1`, not `/reviewer`).
 */
export function backendAllowed(url: URL): boolean {
  const path = url.pathname.endsWith('/') ? url.pathname : `${url.pathname}/`;
  return handlerBackends().some((href) => {
    const entry = entryOf(href);
    return entry.origin === url.origin && path.startsWith(entry.path);
  });
}

/** The field error for a URL not on the list, naming the list (never what is at the URL). */
export function backendRefusal(): string {
  const list = handlerBackends();
  return list.length === 0
    ? 'no handler backend is allowed: the cluster admin allows backends with --handler-backends (chart: handlerBackends)'
    : `must be under one of the backends the cluster admin allows (--handler-backends): ${list.join(', ')}`;
}
