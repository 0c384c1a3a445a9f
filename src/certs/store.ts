/**
 * The certificate store: the serving certificate of every suite, as TLS secure contexts picked
 * per handshake by server name (SNI). Filled from the Secrets the operator watches, so a
 * renewal is live on the next handshake and open connections keep the context they began with.
 */
import tls from 'node:tls';
import { createPrivateKey, X509Certificate } from 'node:crypto';
import { readCertificate } from './x509.ts';

interface Entry {
  names: string[];
  certPem: string;
  keyPem: string;
  notAfter: Date;
  /** Made on the first handshake that asks for it. Why: docs/adr/0019-secure-contexts-made-lazily.md */
  context?: tls.SecureContext;
}

export class CertificateStore {
  private readonly bySuite = new Map<string, Entry>();
  private readonly byName = new Map<string, Entry>();
  private readonly listeners: ((key: string, pems: { certPem: string; keyPem: string } | undefined) => void)[] = [];

  /** Installs (or replaces) the certificate a suite is served with. Unchanged PEM is a no-op. */
  set(suite: string, certPem: string, keyPem: string): void {
    if (this.bySuite.get(suite)?.certPem === certPem) return;
    // The pair checked now, so a bad one is refused here rather than on a handshake.
    const { dnsNames, notAfter } = readCertificate(certPem);
    if (!new X509Certificate(certPem).checkPrivateKey(createPrivateKey(keyPem))) throw new Error(`the key of ${suite}'s certificate is not its certificate's`);
    this.unindex(suite);
    const entry: Entry = { names: dnsNames, certPem, keyPem, notAfter };
    this.bySuite.set(suite, entry);
    for (const name of entry.names) this.byName.set(name.toLowerCase(), entry);
    for (const listener of this.listeners) listener(suite, { certPem, keyPem });
  }

  /**
   * Called with every certificate now set, then on every change (undefined: removed), for a copy
   * of the store elsewhere (the admission thread, which serves the handshakes).
   */
  subscribe(listener: (key: string, pems: { certPem: string; keyPem: string } | undefined) => void): () => void {
    for (const [key, { certPem, keyPem }] of this.bySuite) listener(key, { certPem, keyPem });
    this.listeners.push(listener);
    return () => this.listeners.splice(this.listeners.indexOf(listener), 1);
  }

  /**
   * Installs the certificate of a kubernetes.io/tls Secret's data (base64 `tls.crt`, `tls.key`),
   * or removes the key's when the Secret is gone (`undefined`) or lacks either. True when a
   * different certificate replaced one served: a rotation.
   */
  setFromSecret(key: string, data: Record<string, string> | undefined): boolean {
    const crt = data?.['tls.crt'];
    const tlsKey = data?.['tls.key'];
    if (!crt || !tlsKey) {
      this.remove(key);
      return false;
    }
    return this.install(key, Buffer.from(crt, 'base64').toString(), Buffer.from(tlsKey, 'base64').toString());
  }

  /** Serves `certPem` for `key`; true when a different certificate replaced one served: a rotation. */
  install(key: string, certPem: string, keyPem: string): boolean {
    const before = this.served(key);
    this.set(key, certPem, keyPem);
    return before !== undefined && before !== certPem;
  }

  remove(suite: string): void {
    if (!this.bySuite.has(suite)) return;
    this.unindex(suite);
    this.bySuite.delete(suite);
    for (const listener of this.listeners) listener(suite, undefined);
  }

  /** The PEM a suite is served with now, if any. */
  served(suite: string): string | undefined {
    return this.bySuite.get(suite)?.certPem;
  }

  /** The notAfter of every certificate served now, by the key it was set under (for the expiry metrics). */
  *expiries(): Iterable<{ key: string; notAfter: Date }> {
    for (const [key, { notAfter }] of this.bySuite) yield { key, notAfter };
  }

  contextFor(serverName: string): tls.SecureContext | undefined {
    const entry = this.byName.get(serverName.toLowerCase());
    if (!entry) return undefined;
    return (entry.context ??= tls.createSecureContext({ cert: entry.certPem, key: entry.keyPem }));
  }

  /** For Node's SNICallback. */
  readonly sniCallback = (serverName: string, callback: (err: Error | null, ctx?: tls.SecureContext) => void): void => {
    const context = this.contextFor(serverName);
    if (context) callback(null, context);
    else callback(new Error(`no certificate for server name "${serverName}"`));
  };

  /**
   * Drops a suite's names, each given back to another suite that carries it (two suites that
   * name one Service share it), so a change costs its own names, not every suite's.
   */
  private unindex(suite: string): void {
    const entry = this.bySuite.get(suite);
    if (!entry) return;
    for (const name of entry.names) {
      const key = name.toLowerCase();
      if (this.byName.get(key) !== entry) continue;
      this.byName.delete(key);
      for (const [other, candidate] of this.bySuite) {
        if (other !== suite && candidate.names.some((n) => n.toLowerCase() === key)) this.byName.set(key, candidate);
      }
    }
  }
}
