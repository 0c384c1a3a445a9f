/**
 * Go's net/url (Parse, ParseRequestURI, Hostname, Port, EscapedPath, Query), ported for the url
 * and format libraries: results and error texts are Go's. URLs are handled as UTF-8 byte strings
 * (one char per byte, bytes.ts) as Go does.
 */
import { fromBytes, quoteBytes, toBytes } from './bytes.ts';
import { is4, parseAddr, type Addr } from './netip.ts';

const Mode = { Path: 0, PathSegment: 1, Host: 2, Zone: 3, UserPassword: 4, QueryComponent: 5, Fragment: 6 } as const;
type Mode = (typeof Mode)[keyof typeof Mode];

function isAlnum(c: string): boolean {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

function ishex(c: string | undefined): boolean {
  return c !== undefined && /^[0-9a-fA-F]$/.test(c);
}

function unhex(c: string): number {
  return parseInt(c, 16);
}

function shouldEscape(c: string, mode: Mode): boolean {
  if (isAlnum(c)) return false;
  if ((mode === Mode.Host || mode === Mode.Zone) && '!$&\'()*+,;=:[]<>"'.includes(c)) return false;
  if ('-_.~'.includes(c)) return false;
  if ('$&+,/:;=?@'.includes(c)) {
    switch (mode) {
      case Mode.Path:
        return c === '?';
      case Mode.PathSegment:
        return c === '/' || c === ';' || c === ',' || c === '?';
      case Mode.UserPassword:
        return c === '@' || c === '/' || c === '?' || c === ':';
      case Mode.QueryComponent:
        return true;
      case Mode.Fragment:
        return false;
    }
  }
  if (mode === Mode.Fragment && '!()*'.includes(c)) return false;
  return true;
}

class UrlError extends Error {}

function unescape(s: string, mode: Mode): string {
  let n = 0;
  let hasPlus = false;
  for (let i = 0; i < s.length;) {
    const c = s[i]!;
    if (c === '%') {
      n++;
      if (i + 2 >= s.length || !ishex(s[i + 1]) || !ishex(s[i + 2])) {
        throw new UrlError(`invalid URL escape ${quoteBytes(s.slice(i, i + 3))}`);
      }
      if (mode === Mode.Host && unhex(s[i + 1]!) < 8 && s.slice(i, i + 3) !== '%25') throw new UrlError(`invalid URL escape ${quoteBytes(s.slice(i, i + 3))}`);
      if (mode === Mode.Zone) {
        const v = String.fromCharCode((unhex(s[i + 1]!) << 4) | unhex(s[i + 2]!));
        if (s.slice(i, i + 3) !== '%25' && v !== ' ' && shouldEscape(v, Mode.Host)) throw new UrlError(`invalid URL escape ${quoteBytes(s.slice(i, i + 3))}`);
      }
      i += 3;
    } else if (c === '+') {
      hasPlus = mode === Mode.QueryComponent;
      i++;
    } else {
      if ((mode === Mode.Host || mode === Mode.Zone) && c.charCodeAt(0) < 0x80 && shouldEscape(c, mode)) throw new UrlError(`invalid character ${quoteBytes(c)} in host name`);
      i++;
    }
  }
  if (n === 0 && !hasPlus) return s;
  let out = '';
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c === '%') {
      out += String.fromCharCode((unhex(s[i + 1]!) << 4) | unhex(s[i + 2]!));
      i += 2;
    } else if (c === '+') out += mode === Mode.QueryComponent ? ' ' : '+';
    else out += c;
  }
  return out;
}

function escape(s: string, mode: Mode): string {
  let out = '';
  for (const c of s) {
    if (c === ' ' && mode === Mode.QueryComponent) out += '+';
    else if (shouldEscape(c, mode)) out += `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}`;
    else out += c;
  }
  return out;
}

/** A parsed URL; every field a byte string, as Go keeps them. */
export interface GoURL {
  scheme: string;
  opaque: string;
  host: string;
  path: string;
  rawPath: string;
  rawQuery: string;
  fragment: string;
}

function getScheme(raw: string): [string, string] {
  for (let i = 0; i < raw.length; i++) {
    const c = raw[i]!;
    if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) continue;
    if ((c >= '0' && c <= '9') || c === '+' || c === '-' || c === '.') {
      if (i === 0) return ['', raw];
      continue;
    }
    if (c === ':') {
      if (i === 0) throw new UrlError('missing protocol scheme');
      return [raw.slice(0, i), raw.slice(i + 1)];
    }
    return ['', raw];
  }
  return ['', raw];
}

function validOptionalPort(port: string): boolean {
  return port === '' || /^:[0-9]*$/.test(port);
}

function validUserinfo(s: string): boolean {
  return /^[A-Za-z0-9\-._:~!$&'()*+,;=%@]*$/.test(fromBytes(s));
}

function parseHost(scheme: string, host: string): string {
  const open = host.lastIndexOf('[');
  if (open > 0) throw new UrlError('invalid IP-literal');
  if (open === 0) {
    const close = host.lastIndexOf(']');
    if (close < 0) throw new UrlError("missing ']' in host");
    const colonPort = host.slice(close + 1);
    if (!validOptionalPort(colonPort)) throw new UrlError(`invalid port ${quoteBytes(colonPort)} after host`);
    const port = unescape(colonPort, Mode.Host);
    const hostname = host.slice(1, close);
    const zoneIdx = hostname.indexOf('%25');
    const unescaped = zoneIdx >= 0 ? unescape(hostname.slice(0, zoneIdx), Mode.Host) + unescape(hostname.slice(zoneIdx), Mode.Zone) : unescape(hostname, Mode.Host);
    let addr: Addr;
    try {
      addr = parseAddr(fromBytes(unescaped));
    } catch (err) {
      throw new UrlError(`invalid host: ${(err as Error).message}`);
    }
    if (is4(addr)) throw new UrlError('invalid IP-literal');
    return `[${unescaped}]${port}`;
  }
  let i = host.indexOf(':');
  if (i !== -1) {
    const last = host.lastIndexOf(':');
    // Go 1.26: colons inside the host stay an error for http and https (urlstrictcolons=1)
    if (last !== i && scheme !== 'http' && scheme !== 'https') i = last;
    const colonPort = host.slice(i);
    if (!validOptionalPort(colonPort)) throw new UrlError(`invalid port ${quoteBytes(colonPort)} after host`);
  }
  return unescape(host, Mode.Host);
}

function parseAuthority(scheme: string, authority: string): string {
  const at = authority.lastIndexOf('@');
  const host = parseHost(scheme, at < 0 ? authority : authority.slice(at + 1));
  if (at < 0) return host;
  const userinfo = authority.slice(0, at);
  if (!validUserinfo(userinfo)) throw new UrlError('net/url: invalid userinfo');
  const colon = userinfo.indexOf(':');
  if (colon < 0) unescape(userinfo, Mode.UserPassword);
  else {
    unescape(userinfo.slice(0, colon), Mode.UserPassword);
    unescape(userinfo.slice(colon + 1), Mode.UserPassword);
  }
  return host;
}

function parse(raw: string, viaRequest: boolean): GoURL {
  // eslint-disable-next-line no-control-regex -- Go's net/url refuses these control characters, by this range
  if (/[\x00-\x1f\x7f]/.test(raw)) throw new UrlError('net/url: invalid control character in URL');
  if (raw === '' && viaRequest) throw new UrlError('empty url');
  const url: GoURL = { scheme: '', opaque: '', host: '', path: '', rawPath: '', rawQuery: '', fragment: '' };
  if (raw === '*') {
    url.path = '*';
    return url;
  }
  let [scheme, rest] = getScheme(raw);
  url.scheme = scheme.toLowerCase();
  if (rest.endsWith('?') && rest.split('?').length === 2) rest = rest.slice(0, -1);
  else {
    const q = rest.indexOf('?');
    if (q >= 0) {
      url.rawQuery = rest.slice(q + 1);
      rest = rest.slice(0, q);
    }
  }
  if (!rest.startsWith('/')) {
    if (url.scheme !== '') {
      url.opaque = rest;
      return url;
    }
    if (viaRequest) throw new UrlError('invalid URI for request');
    const segment = rest.split('/')[0]!;
    if (segment.includes(':')) throw new UrlError('first path segment in URL cannot contain colon');
  }
  if ((url.scheme !== '' || (!viaRequest && !rest.startsWith('///'))) && rest.startsWith('//')) {
    let authority = rest.slice(2);
    rest = '';
    const slash = authority.indexOf('/');
    if (slash >= 0) {
      rest = authority.slice(slash);
      authority = authority.slice(0, slash);
    }
    url.host = parseAuthority(url.scheme, authority);
  }
  url.path = unescape(rest, Mode.Path);
  url.rawPath = escape(url.path, Mode.Path) === rest ? '' : rest;
  return url;
}

function urlError(raw: string, err: unknown): Error {
  if (err instanceof UrlError) return new Error(`parse ${quoteBytes(raw)}: ${err.message}`);
  return err as Error;
}

/** url.ParseRequestURI of a CEL string; throws `parse "<url>": <reason>`. */
export function parseRequestURI(s: string): GoURL {
  const raw = toBytes(s);
  try {
    return parse(raw, true);
  } catch (err) {
    throw urlError(raw, err);
  }
}

/** url.Parse of a CEL string; throws `parse "<url>": <reason>`. */
export function parseURL(s: string): GoURL {
  const raw = toBytes(s);
  const hash = raw.indexOf('#');
  const u = hash >= 0 ? raw.slice(0, hash) : raw;
  let url: GoURL;
  try {
    url = parse(u, false);
  } catch (err) {
    throw urlError(u, err);
  }
  if (hash >= 0) {
    try {
      url.fragment = unescape(raw.slice(hash + 1), Mode.Fragment);
    } catch (err) {
      throw urlError(raw, err);
    }
  }
  return url;
}

function splitHostPort(hostPort: string): [string, string] {
  let host = hostPort;
  let port = '';
  const colon = host.lastIndexOf(':');
  if (colon !== -1 && validOptionalPort(host.slice(colon))) {
    port = host.slice(colon + 1);
    host = host.slice(0, colon);
  }
  if (host.startsWith('[') && host.endsWith(']')) host = host.slice(1, -1);
  return [host, port];
}

export function urlHostname(u: GoURL): string {
  return fromBytes(splitHostPort(u.host)[0]);
}

export function urlPort(u: GoURL): string {
  return fromBytes(splitHostPort(u.host)[1]);
}

function validEncoded(s: string, mode: Mode): boolean {
  for (const c of s) {
    if ("!$&'()*+,;=:@[]%".includes(c)) continue;
    if (shouldEscape(c, mode)) return false;
  }
  return true;
}

export function urlEscapedPath(u: GoURL): string {
  if (u.rawPath !== '' && validEncoded(u.rawPath, Mode.Path)) {
    try {
      if (unescape(u.rawPath, Mode.Path) === u.path) return fromBytes(u.rawPath);
    } catch {
      // fall through to escaping the path
    }
  }
  if (u.path === '*') return '*';
  return fromBytes(escape(u.path, Mode.Path));
}

/** url.URL.Query(): malformed pairs are dropped silently, as Go does. */
export function urlQuery(u: GoURL): Map<string, string[]> {
  const out = new Map<string, string[]>();
  let query = u.rawQuery;
  while (query !== '') {
    const amp = query.indexOf('&');
    let key = amp >= 0 ? query.slice(0, amp) : query;
    query = amp >= 0 ? query.slice(amp + 1) : '';
    if (key.includes(';') || key === '') continue;
    const eq = key.indexOf('=');
    let value = eq >= 0 ? key.slice(eq + 1) : '';
    key = eq >= 0 ? key.slice(0, eq) : key;
    try {
      key = unescape(key, Mode.QueryComponent);
      value = unescape(value, Mode.QueryComponent);
    } catch {
      continue;
    }
    const k = fromBytes(key);
    const list = out.get(k) ?? [];
    list.push(fromBytes(value));
    out.set(k, list);
  }
  return out;
}
