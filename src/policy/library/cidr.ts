/**
 * Kubernetes' CIDR library (apiserver pkg/cel/library/cidr.go): cidr(), isCIDR(),
 * string(cidr), containsIP, containsCIDR (each with a string or a typed argument), ip(),
 * prefixLength() and masked(), on Go's netip prefixes (go/netip.ts); also the type names `net.IP`
 * and `net.CIDR` (`type(x) == net.CIDR`).
 */
import type { Environment } from '@marcbachmann/cel-js';
import { celError } from '../celjs/values.ts';
import { goQuote } from '../../go/strconv.ts';
import * as net from '../../go/netip.ts';
import { IPValue, parseIP } from './ip.ts';

/** A CEL `net.CIDR` value. */
export class CIDRValue {
  readonly celTypeName = 'net.CIDR';
  readonly prefix: net.Prefix;
  constructor(prefix: net.Prefix) {
    this.prefix = prefix;
  }
  equals(other: unknown): boolean {
    return other instanceof CIDRValue && other.prefix.bits === this.prefix.bits && net.addrEquals(this.prefix.addr, other.prefix.addr);
  }
  toString(): string {
    return net.prefixString(this.prefix);
  }
}

const PARSE_ERROR = 'network address parse error during conversion from string';

function parseCIDR(s: string): net.Prefix {
  let prefix: net.Prefix;
  try {
    prefix = net.parsePrefix(s);
  } catch (err) {
    throw celError(`${PARSE_ERROR}: ${PARSE_ERROR}: ${(err as Error).message}`);
  }
  if (net.is4In6(prefix.addr)) throw celError(`${PARSE_ERROR}: IPv4-mapped IPv6 address ${goQuote(s)} is not allowed`);
  return prefix;
}

function isCIDR(s: string): boolean {
  try {
    parseCIDR(s);
    return true;
  } catch {
    return false;
  }
}

/** containsIP(string) with an unparsable address: the API server reports no matching overload. */
function parseContainedIP(s: string): net.Addr {
  try {
    return parseIP(s);
  } catch {
    throw celError('no such overload');
  }
}

function containsCIDR(c: CIDRValue, other: net.Prefix): boolean {
  return net.prefixOverlaps(c.prefix, other) && c.prefix.bits <= other.bits;
}

export function registerCIDR(env: Environment): void {
  env.registerType('net.CIDR', CIDRValue);
  env.registerFunction('cidr(string): net.CIDR', (s: string) => new CIDRValue(parseCIDR(s)));
  env.registerFunction('isCIDR(string): bool', isCIDR);
  env.registerFunction('string(net.CIDR): string', (c: CIDRValue) => c.toString());
  env.registerFunction('net.CIDR.containsIP(string): bool', (c: CIDRValue, s: string) => net.prefixContains(c.prefix, parseContainedIP(s)));
  env.registerFunction('net.CIDR.containsIP(net.IP): bool', (c: CIDRValue, ip: IPValue) => net.prefixContains(c.prefix, ip.addr));
  env.registerFunction('net.CIDR.containsCIDR(string): bool', (c: CIDRValue, s: string) => containsCIDR(c, parseCIDR(s)));
  env.registerFunction('net.CIDR.containsCIDR(net.CIDR): bool', (c: CIDRValue, o: CIDRValue) => containsCIDR(c, o.prefix));
  env.registerFunction('net.CIDR.ip(): net.IP', (c: CIDRValue) => new IPValue(c.prefix.addr));
  env.registerFunction('net.CIDR.prefixLength(): int', (c: CIDRValue) => BigInt(c.prefix.bits));
  env.registerFunction('net.CIDR.masked(): net.CIDR', (c: CIDRValue) => new CIDRValue({ addr: net.maskAddr(c.prefix.addr, c.prefix.bits), bits: c.prefix.bits }));
  env.registerOperator('net.CIDR == net.CIDR', (a: CIDRValue, b: CIDRValue) => a.equals(b));
  env.registerConstant('net', 'map<string, type>', { IP: env.evaluate('type(ip("0.0.0.0"))'), CIDR: env.evaluate('type(cidr("0.0.0.0/0"))') });
}
