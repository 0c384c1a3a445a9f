/**
 * Go's net/netip (ParseAddr, ParsePrefix, String, the address classes), ported for the ip, cidr
 * and format libraries: Kubernetes' CEL functions are thin wrappers around these, so their
 * results and error texts are Go's.
 */
import { goQuote } from './strconv.ts';

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
