/**
 * certs: the few DER (ASN.1) shapes an X.509 certificate of ours is made of, written and read.
 * Owns the byte encoding only: which fields a certificate has, and what they mean, is x509.ts'.
 * Why not an ASN.1 library: docs/adr/0009-der-written-by-hand.md
 */

const TAG = {
  BOOLEAN: 0x01,
  INTEGER: 0x02,
  BIT_STRING: 0x03,
  OCTET_STRING: 0x04,
  NULL: 0x05,
  OID: 0x06,
  UTF8_STRING: 0x0c,
  PRINTABLE_STRING: 0x13,
  UTC_TIME: 0x17,
  GENERALIZED_TIME: 0x18,
  SEQUENCE: 0x30,
  SET: 0x31,
} as const;

/** One tag-length-value. */
function tlv(tag: number, content: Uint8Array): Buffer {
  const n = content.length;
  let header: number[];
  if (n < 0x80) header = [tag, n];
  else if (n < 0x100) header = [tag, 0x81, n];
  else if (n < 0x10000) header = [tag, 0x82, n >> 8, n & 0xff];
  else if (n < 0x1000000) header = [tag, 0x83, n >> 16, (n >> 8) & 0xff, n & 0xff];
  else throw new RangeError(`a DER value of ${n} bytes is longer than a certificate needs`);
  return Buffer.concat([Buffer.from(header), content]);
}

export const sequence = (...items: Uint8Array[]): Buffer => tlv(TAG.SEQUENCE, Buffer.concat(items));
export const set = (...items: Uint8Array[]): Buffer => tlv(TAG.SET, Buffer.concat(items));
export const octetString = (bytes: Uint8Array): Buffer => tlv(TAG.OCTET_STRING, bytes);
export const nullValue = (): Buffer => tlv(TAG.NULL, Buffer.alloc(0));
export const boolean = (value: boolean): Buffer => tlv(TAG.BOOLEAN, Buffer.from([value ? 0xff : 0x00]));
/** `[n] EXPLICIT`: the value inside a constructed context-specific tag. */
export const explicit = (n: number, value: Uint8Array): Buffer => tlv(0xa0 | n, value);
/** `[n] IMPLICIT` of a primitive value: its content under a context-specific tag. */
export const implicit = (n: number, content: Uint8Array): Buffer => tlv(0x80 | n, content);

/** A non-negative INTEGER from its big-endian magnitude (a 0x00 is prefixed where the sign bit is set). */
export function unsignedInteger(magnitude: Uint8Array): Buffer {
  let start = 0;
  while (start < magnitude.length - 1 && magnitude[start] === 0) start++;
  const bytes = magnitude.subarray(start);
  return tlv(TAG.INTEGER, bytes[0]! & 0x80 ? Buffer.concat([Buffer.from([0]), bytes]) : bytes);
}

export const smallInteger = (n: number): Buffer => unsignedInteger(Buffer.from([n]));

/** A BIT STRING of whole bytes. */
export const bitString = (bytes: Uint8Array): Buffer => tlv(TAG.BIT_STRING, Buffer.concat([Buffer.from([0]), bytes]));

/**
 * A named-bit BIT STRING (KeyUsage): bit 0 is the first byte's high bit, and DER drops the
 * trailing zero bits.
 */
export function namedBits(bits: number[]): Buffer {
  const last = Math.max(...bits);
  const bytes = Buffer.alloc((last >> 3) + 1);
  for (const bit of bits) bytes[bit >> 3] = bytes[bit >> 3]! | (0x80 >> (bit & 7));
  const unused = 7 - (last & 7);
  return tlv(TAG.BIT_STRING, Buffer.concat([Buffer.from([unused]), bytes]));
}

export function oid(dotted: string): Buffer {
  const [first, second, ...rest] = dotted.split('.').map(Number);
  const out: number[] = [first! * 40 + second!];
  for (const arc of rest) {
    const base128: number[] = [arc & 0x7f];
    for (let v = Math.floor(arc / 128); v > 0; v = Math.floor(v / 128)) base128.unshift((v & 0x7f) | 0x80);
    out.push(...base128);
  }
  return tlv(TAG.OID, Buffer.from(out));
}

const PRINTABLE = /^[A-Za-z0-9 '()+,\-./:=?]*$/;

/** A directory string as Go's x509 writes one: PrintableString where every character allows it, else UTF8String. */
export function directoryString(text: string): Buffer {
  return tlv(PRINTABLE.test(text) ? TAG.PRINTABLE_STRING : TAG.UTF8_STRING, Buffer.from(text, 'utf8'));
}

export const ia5Content = (text: string): Buffer => Buffer.from(text, 'ascii');

/** RFC 5280 4.1.2.5: UTCTime through 2049, GeneralizedTime from 2050; whole seconds, in UTC. */
export function time(date: Date): Buffer {
  const iso = date.toISOString(); // YYYY-MM-DDTHH:MM:SS.sssZ
  const digits = iso.slice(0, 4) + iso.slice(5, 7) + iso.slice(8, 10) + iso.slice(11, 13) + iso.slice(14, 16) + iso.slice(17, 19) + 'Z';
  const year = date.getUTCFullYear();
  if (year < 1950 || year > 9999) throw new RangeError(`${iso} cannot be a certificate's time`);
  return year < 2050 ? tlv(TAG.UTC_TIME, Buffer.from(digits.slice(2), 'ascii')) : tlv(TAG.GENERALIZED_TIME, Buffer.from(digits, 'ascii'));
}

/** One value read back: its tag, the whole encoding, and where its content lies in `der`. */
export interface Element {
  tag: number;
  /** The whole tag-length-value. */
  raw: Buffer;
  content: Buffer;
}

/** The value at `offset` in `der`. */
export function read(der: Buffer, offset = 0): Element {
  const tag = der[offset];
  let length = der[offset + 1];
  if (tag === undefined || length === undefined) throw new Error('DER: truncated');
  let header = 2;
  if (length & 0x80) {
    const count = length & 0x7f;
    if (count === 0 || count > 3) throw new Error('DER: unsupported length');
    length = 0;
    for (let i = 0; i < count; i++) length = length * 256 + der[offset + 2 + i]!;
    header += count;
  }
  const end = offset + header + length;
  if (end > der.length) throw new Error('DER: truncated');
  return { tag, raw: der.subarray(offset, end), content: der.subarray(offset + header, end) };
}

/** The values inside a constructed one. */
export function children(element: Element): Element[] {
  const out: Element[] = [];
  for (let offset = 0; offset < element.content.length;) {
    const child = read(element.content, offset);
    out.push(child);
    offset += child.raw.length;
  }
  return out;
}
