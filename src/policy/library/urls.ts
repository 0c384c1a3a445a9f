/**
 * Kubernetes' URL library (apiserver pkg/cel/library/urls.go): url(), isURL() and the accessors
 * getScheme, getHost, getHostname, getPort, getEscapedPath, getQuery, on Go's net/url parsing
 * (go/url.ts). url() accepts what ParseRequestURI accepts (absolute URLs and absolute paths) and
 * keeps the fragment apart, as the API server does.
 */
import type { Environment } from '@marcbachmann/cel-js';
import { celError } from '../celjs/values.ts';
import { COST_SIZE } from '../cost/calls.ts';
import { fromBytes } from '../../go/bytes.ts';
import { parseRequestURI, parseURL, urlEscapedPath, urlHostname, urlPort, urlQuery, type GoURL } from '../../go/url.ts';

/** A CEL `kubernetes.URL` value. */
export class URLValue {
  readonly celTypeName = 'kubernetes.URL';
  readonly url: GoURL;
  readonly text: string;
  constructor(url: GoURL, text: string) {
    this.url = url;
    this.text = text;
  }
  equals(other: unknown): boolean {
    return other instanceof URLValue && other.text === this.text;
  }
  /** What its accessors read again (a team's policy is charged by it, cost/calls.ts). */
  get [COST_SIZE](): number {
    return this.text.length;
  }
  toString(): string {
    return this.text;
  }
}

function toURL(s: string): URLValue {
  try {
    parseRequestURI(s);
    return new URLValue(parseURL(s), s);
  } catch (err) {
    throw celError(`URL parse error during conversion from string: ${(err as Error).message}`);
  }
}

function isURL(s: string): boolean {
  try {
    parseRequestURI(s);
    return true;
  } catch {
    return false;
  }
}

export function registerURLs(env: Environment): void {
  env.registerType('kubernetes.URL', URLValue);
  env.registerFunction('url(string): kubernetes.URL', toURL);
  env.registerFunction('isURL(string): bool', isURL);
  env.registerFunction('kubernetes.URL.getScheme(): string', (u: URLValue) => fromBytes(u.url.scheme));
  env.registerFunction('kubernetes.URL.getHost(): string', (u: URLValue) => fromBytes(u.url.host));
  env.registerFunction('kubernetes.URL.getHostname(): string', (u: URLValue) => urlHostname(u.url));
  env.registerFunction('kubernetes.URL.getPort(): string', (u: URLValue) => urlPort(u.url));
  env.registerFunction('kubernetes.URL.getEscapedPath(): string', (u: URLValue) => urlEscapedPath(u.url));
  env.registerFunction('kubernetes.URL.getQuery(): map<string, list<string>>', (u: URLValue) => urlQuery(u.url));
  env.registerOperator('kubernetes.URL == kubernetes.URL', (a: URLValue, b: URLValue) => a.equals(b));
}
