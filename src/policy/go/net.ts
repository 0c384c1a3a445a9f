/**
 * Go's net/netip (ParseAddr, ParsePrefix, String, the address classes) and net/url (Parse,
 * ParseRequestURI, Hostname, Port, EscapedPath, Query), ported for the url, ip, cidr and format
 * libraries: Kubernetes' CEL functions are thin wrappers around these, so their results and
 * error texts are Go's. URLs are handled as UTF-8 byte strings (one char per byte) as Go does.
 */
import { goQuote } from '../library/strings.ts';

// ---------------------------------------------------------------------------------------------
// Byte strings

/** The UTF-8 bytes of `s`, one char per byte. */
export function toBytes(s: string): string {
  return Buffer.from(s, 'utf8').toString('latin1');
}

/** A byte string back to text (invalid sequences become U+FFFD, as CEL strings would). */
export function fromBytes(b: string): string {
  return Buffer.from(b, 'latin1').toString('utf8');
}

/** strconv.Quote of a byte string: valid UTF-8 as goQuote does, stray bytes as \xNN. */
export function quoteBytes(b: string): string {
  const bytes = Buffer.from(b, 'latin1');
  let out = '';
  let i = 0;
  while (i < bytes.length) {
    const c = bytes[i]!;
    const len = c < 0x80 ? 1 : c >= 0xc2 && c < 0xe0 ? 2 : c >= 0xe0 && c < 0xf0 ? 3 : c >= 0xf0 && c < 0xf5 ? 4 : 0;
    const chunk = len ? bytes.subarray(i, i + len) : undefined;
    let text: string | undefined;
    if (chunk && chunk.length === len) {
      try {
        text = new TextDecoder('utf-8', { fatal: true }).decode(chunk);
      } catch {
        text = undefined;
      }
    }
    if (text === undefined) {
      out += `\\x${c.toString(16).padStart(2, '0')}`;
      i++;
    } else {
      out += goQuote(text).slice(1, -1);
      i += len;
    }
  }
  return `"${out}"`;
}

// ---------------------------------------------------------------------------------------------
// net/netip

export interface Addr {
  /** 4 bytes for IPv4, 16 for IPv6 (IPv4-mapped IPv6 included). */
  bytes: Uint8Array;
  zone: string;
}

class ParseAddrError extends Error {}

function addrError(input: string, msg: string, at = ''): ParseAddrError {
  return new ParseAddrError(`ParseAddr(${goQuote(input)}): ${msg}${at ? ` (at ${goQuote(at)})` : ''}`);
}

function parseIPv4Fields(input: string, off: number, end: number, fields: Uint8Array, pos0: number): void {
  let val = 0;
  let pos = 0;
  let digLen = 0;
  const s = input.slice(off, end);
  for (let i = 0; i < s.length; i++) {
    const c = s[i]!;
    if (c >= '0' && c <= '9') {
      if (digLen === 1 && val === 0) throw addrError(input, 'IPv4 field has octet with leading zero');
      val = val * 10 + (c.charCodeAt(0) - 48);
      digLen++;
      if (val > 255) throw addrError(input, 'IPv4 field has value >255');
    } else if (c === '.') {
      if (i === 0 || i === s.length - 1 || s[i - 1] === '.') throw addrError(input, 'IPv4 field must have at least one digit', s.slice(i));
      if (pos === 3) throw addrError(input, 'IPv4 address too long');
      fields[pos0 + pos] = val;
      pos++;
      val = 0;
      digLen = 0;
    } else {
      throw addrError(input, 'unexpected character', s.slice(i));
    }
  }
  if (pos < 3) throw addrError(input, 'IPv4 address too short');
  fields[pos0 + 3] = val;
}

function parseIPv6(input: string): Addr {
  let s = input;
  let zone = '';
  const z = s.indexOf('%');
  if (z !== -1) {
    zone = s.slice(z + 1);
    s = s.slice(0, z);
    if (zone === '') throw addrError(input, 'zone must be a non-empty string');
  }
  const ip = new Uint8Array(16);
  let ellipsis = -1;
  if (s.length >= 2 && s[0] === ':' && s[1] === ':') {
    ellipsis = 0;
    s = s.slice(2);
    if (s.length === 0) return { bytes: ip, zone };
  }
  let i = 0;
  while (i < 16) {
    let off = 0;
    let acc = 0;
    for (; off < s.length; off++) {
      const c = s[off]!;
      const d = c >= '0' && c <= '9' ? c.charCodeAt(0) - 48 : c >= 'a' && c <= 'f' ? c.charCodeAt(0) - 87 : c >= 'A' && c <= 'F' ? c.charCodeAt(0) - 55 : -1;
      if (d < 0) break;
      acc = acc * 16 + d;
      if (off > 3) throw addrError(input, 'each group must have 4 or less digits', s);
      if (acc > 0xffff) throw addrError(input, 'IPv6 field has value >=2^16', s);
    }
    if (off === 0) throw addrError(input, 'each colon-separated field must have at least one digit', s);
    if (off < s.length && s[off] === '.') {
      if (ellipsis < 0 && i !== 12) throw addrError(input, 'embedded IPv4 address must replace the final 2 fields of the address', s);
      if (i + 4 > 16) throw addrError(input, 'too many hex fields to fit an embedded IPv4 at the end of the address', s);
      let end = input.length;
      if (zone.length > 0) end -= zone.length + 1;
      parseIPv4Fields(input, end - s.length, end, ip, i);
      s = '';
      i += 4;
      break;
    }
    ip[i] = acc >> 8;
    ip[i + 1] = acc & 0xff;
    i += 2;
    s = s.slice(off);
    if (s.length === 0) break;
    if (s[0] !== ':') throw addrError(input, 'unexpected character, want colon', s);
    if (s.length === 1) throw addrError(input, 'colon must be followed by more characters', s);
    s = s.slice(1);
    if (s[0] === ':') {
      if (ellipsis >= 0) throw addrError(input, 'multiple :: in address', s);
      ellipsis = i;
      s = s.slice(1);
      if (s.length === 0) break;
    }
  }
  if (s.length !== 0) throw addrError(input, 'trailing garbage after address', s);
  if (i < 16) {
    if (ellipsis < 0) throw addrError(input, 'address string too short');
    const n = 16 - i;
    for (let j = i - 1; j >= ellipsis; j--) ip[j + n] = ip[j]!;
    ip.fill(0, ellipsis, ellipsis + n);
  } else if (ellipsis >= 0) {
    throw addrError(input, 'the :: must expand to at least one field of zeros');
  }
  return { bytes: ip, zone };
}

/** netip.ParseAddr; throws Go's error text. */
export function parseAddr(s: string): Addr {
  for (const c of s) {
    if (c === '.') {
      const fields = new Uint8Array(4);
      parseIPv4Fields(s, 0, s.length, fields, 0);
      return { bytes: fields, zone: '' };
    }
    if (c === ':') return parseIPv6(s);
    if (c === '%') throw addrError(s, 'missing IPv6 address');
  }
  throw addrError(s, 'unable to parse IP');
}

export function is4(a: Addr): boolean {
  return a.bytes.length === 4;
}

export function is4In6(a: Addr): boolean {
  const b = a.bytes;
  return b.length === 16 && b.subarray(0, 10).every((x) => x === 0) && b[10] === 0xff && b[11] === 0xff;
}

function unmap(a: Addr): Addr {
  return is4In6(a) ? { bytes: a.bytes.slice(12), zone: '' } : a;
}

function u16(b: Uint8Array, i: number): number {
  return (b[2 * i]! << 8) | b[2 * i + 1]!;
}

/** netip.Addr.String */
export function addrString(a: Addr): string {
  const b = a.bytes;
  if (b.length === 4) return [...b].join('.');
  if (is4In6(a)) return `::ffff:${[...b.subarray(12)].join('.')}${a.zone ? `%${a.zone}` : ''}`;
  let zeroStart = 255;
  let zeroEnd = 255;
  for (let i = 0; i < 8; i++) {
    let j = i;
    while (j < 8 && u16(b, j) === 0) j++;
    const l = j - i;
    if (l >= 2 && l > zeroEnd - zeroStart) {
      zeroStart = i;
      zeroEnd = j;
    }
  }
  let out = '';
  for (let i = 0; i < 8; i++) {
    if (i === zeroStart) {
      out += '::';
      i = zeroEnd;
      if (i >= 8) break;
    } else if (i > 0) out += ':';
    out += u16(b, i).toString(16);
  }
  return a.zone ? `${out}%${a.zone}` : out;
}

export function isUnspecified(a: Addr): boolean {
  return a.bytes.every((x) => x === 0);
}

export function isLoopback(a: Addr): boolean {
  a = unmap(a);
  if (is4(a)) return a.bytes[0] === 127;
  return a.bytes.subarray(0, 15).every((x) => x === 0) && a.bytes[15] === 1;
}

export function isMulticast(a: Addr): boolean {
  a = unmap(a);
  return is4(a) ? (a.bytes[0]! & 0xf0) === 0xe0 : a.bytes[0] === 0xff;
}

export function isLinkLocalMulticast(a: Addr): boolean {
  a = unmap(a);
  if (is4(a)) return a.bytes[0] === 224 && a.bytes[1] === 0 && a.bytes[2] === 0;
  return (u16(a.bytes, 0) & 0xff0f) === 0xff02;
}

export function isLinkLocalUnicast(a: Addr): boolean {
  a = unmap(a);
  if (is4(a)) return a.bytes[0] === 169 && a.bytes[1] === 254;
  return (u16(a.bytes, 0) & 0xffc0) === 0xfe80;
}

export function isGlobalUnicast(a: Addr): boolean {
  a = unmap(a);
  if (is4(a) && (isUnspecified(a) || a.bytes.every((x) => x === 255))) return false;
  return !isUnspecified(a) && !isLoopback(a) && !isMulticast(a) && !isLinkLocalUnicast(a);
}

export function addrEquals(a: Addr, b: Addr): boolean {
  return a.bytes.length === b.bytes.length && a.zone === b.zone && a.bytes.every((x, i) => x === b.bytes[i]);
}

export interface Prefix {
  addr: Addr;
  bits: number;
}

/** netip.ParsePrefix; throws Go's error text. */
export function parsePrefix(s: string): Prefix {
  const fail = (msg: string) => new Error(`netip.ParsePrefix(${goQuote(s)}): ${msg}`);
  const i = s.lastIndexOf('/');
  if (i < 0) throw fail("no '/'");
  let addr: Addr;
  try {
    addr = parseAddr(s.slice(0, i));
  } catch (err) {
    throw fail((err as Error).message);
  }
  if (!is4(addr) && addr.zone !== '') throw fail('IPv6 zones cannot be present in a prefix');
  const bitsText = s.slice(i + 1);
  if ((bitsText.length > 1 && (bitsText[0]! < '1' || bitsText[0]! > '9')) || !/^[+-]?[0-9]+$/.test(bitsText)) throw fail(`bad bits after slash: ${goQuote(bitsText)}`);
  const bits = Number(bitsText);
  const max = is4(addr) ? 32 : 128;
  if (bits < 0 || bits > max) throw fail('prefix length out of range');
  return { addr, bits };
}

/** The first `bits` bits of `a`, the rest zero (netip.Addr.Prefix). */
export function maskAddr(a: Addr, bits: number): Addr {
  const out = new Uint8Array(a.bytes.length);
  for (let i = 0; i < out.length; i++) {
    const keep = Math.max(0, Math.min(8, bits - 8 * i));
    out[i] = a.bytes[i]! & ((0xff << (8 - keep)) & 0xff);
  }
  return { bytes: out, zone: '' };
}

export function prefixString(p: Prefix): string {
  return `${addrString(p.addr)}/${p.bits}`;
}

export function prefixContains(p: Prefix, a: Addr): boolean {
  if (a.zone !== '' || a.bytes.length !== p.addr.bytes.length) return false;
  return addrEquals(maskAddr(a, p.bits), maskAddr(p.addr, p.bits));
}

export function prefixOverlaps(p: Prefix, o: Prefix): boolean {
  if (p.bits === o.bits && addrEquals(p.addr, o.addr)) return true;
  if (is4(p.addr) !== is4(o.addr)) return false;
  const min = Math.min(p.bits, o.bits);
  if (min === 0) return true;
  return addrEquals(maskAddr(p.addr, min), maskAddr(o.addr, min));
}

// ---------------------------------------------------------------------------------------------
// net/url

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
  if ((mode === Mode.Host || mode === Mode.Zone) && "!$&'()*+,;=:[]<>\"".includes(c)) return false;
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
  for (let i = 0; i < s.length; ) {
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
  // eslint-disable-next-line no-control-regex
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
