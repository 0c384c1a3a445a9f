/**
 * Kubernetes' IP library (apiserver pkg/cel/library/ip.go): ip(), isIP(), ip.isCanonical(),
 * string(ip), family() and the address classes (isUnspecified, isLoopback,
 * isLinkLocalMulticast, isLinkLocalUnicast, isGlobalUnicast), on Go's netip parsing (go/netip.ts).
 * Zones and IPv4-mapped IPv6 addresses are refused, as the API server refuses them.
 */
import type { Environment } from '@marcbachmann/cel-js';
import { celError } from '../celjs/values.ts';
import { goQuote } from '../../go/strconv.ts';
import * as net from '../../go/netip.ts';

/** A CEL `net.IP` value. */
export class IPValue {
  readonly celTypeName = 'net.IP';
  readonly addr: net.Addr;
  constructor(addr: net.Addr) {
    this.addr = addr;
  }
  equals(other: unknown): boolean {
    return other instanceof IPValue && net.addrEquals(this.addr, other.addr);
  }
  toString(): string {
    return net.addrString(this.addr);
  }
}

/** The apiserver's parseIPAddr: netip.ParseAddr without zones or IPv4-mapped IPv6. */
export function parseIP(s: string): net.Addr {
  let addr: net.Addr;
  try {
    addr = net.parseAddr(s);
  } catch (err) {
    throw celError(`IP Address ${goQuote(s)} parse error during conversion from string: ${(err as Error).message}`);
  }
  if (addr.zone !== '') throw celError(`IP address ${goQuote(s)} with zone value is not allowed`);
  if (net.is4In6(addr)) throw celError(`IPv4-mapped IPv6 address ${goQuote(s)} is not allowed`);
  return addr;
}

function isIP(s: string): boolean {
  try {
    parseIP(s);
    return true;
  } catch {
    return false;
  }
}

class IPNamespace {}

export function registerIP(env: Environment): void {
  env.registerType('net.IP', IPValue);
  env.registerType('IPNamespace', IPNamespace);
  env.registerConstant('ip', 'IPNamespace', new IPNamespace());
  env.registerFunction('ip(string): net.IP', (s: string) => new IPValue(parseIP(s)));
  env.registerFunction('isIP(string): bool', isIP);
  env.registerFunction('IPNamespace.isCanonical(string): bool', (_: unknown, s: string) => net.addrString(parseIP(s)) === s);
  env.registerFunction('string(net.IP): string', (ip: IPValue) => ip.toString());
  env.registerFunction('net.IP.family(): int', (ip: IPValue) => (net.is4(ip.addr) ? 4n : 6n));
  env.registerFunction('net.IP.isUnspecified(): bool', (ip: IPValue) => net.isUnspecified(ip.addr));
  env.registerFunction('net.IP.isLoopback(): bool', (ip: IPValue) => net.isLoopback(ip.addr));
  env.registerFunction('net.IP.isLinkLocalMulticast(): bool', (ip: IPValue) => net.isLinkLocalMulticast(ip.addr));
  env.registerFunction('net.IP.isLinkLocalUnicast(): bool', (ip: IPValue) => net.isLinkLocalUnicast(ip.addr));
  env.registerFunction('net.IP.isGlobalUnicast(): bool', (ip: IPValue) => net.isGlobalUnicast(ip.addr));
  env.registerOperator('net.IP == net.IP', (a: IPValue, b: IPValue) => a.equals(b));
}
