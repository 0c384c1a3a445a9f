/**
 * admission: the connections of one AdmissionEndpoint by source address and kind (`apiserver`: an allowance
 * that grows with the webhooks served; `other`: a cap per address and in all), the limits that keep one client
 * from holding the endpoint without ever turning the API server away, and the warnings before them.
 * A connection that has served a request is never closed to make room. Why two kinds, and the rules: docs/adr/0023-connections-by-kind.md
 */
import type { Socket } from 'node:net';
import type { LogWriter } from '../log.ts';

export type ConnectionKind = 'apiserver' | 'other';

/** Connections held now, by kind, and what the limits allow each kind in all. */
export interface ConnectionCounts {
  apiserver: number;
  other: number;
  apiserverLimit: number;
  otherLimit: number;
}

/** What sizes the API server's allowance. */
export interface ConnectionSizing {
  /** Webhooks served (the API server keeps a client of its own for each). */
  webhooks(): number;
  /** Whether a (normalized: no `::ffff:` prefix) source address is one of the API server's. */
  isApiServer(address: string): boolean;
  /** How many addresses the API server has (the total its kind may hold is its allowance times this). */
  apiServerAddresses(): number;
}

/**
 * Connections per webhook each API server address may hold beyond the others' per-address share:
 * over HTTP/1.1, the connections of a burst of concurrent requests to it (client-go keeps idle
 * ones per client, for 90 s). Sized so the API server never meets it; an attacker from its address
 * holds at most this many sockets until the timeouts reap them (docs/adr/0021-connection-caps.md).
 */
export const CONNECTIONS_PER_WEBHOOK = 4;

/** The share of a limit at which its warning is logged. */
export const WARN_AT = 0.8;
/** How often what the limits did is summed up in one log line. */
const LOG_MS = 10_000;

/** The TLS socket of a connection: where a request's answer marks its connection as having served. */
const HELD = Symbol('held connection');

interface Held {
  socket: Socket;
  address: string;
  kind: ConnectionKind;
  served: boolean;
}

interface AddressConnections {
  kind: ConnectionKind;
  /** By remote port, oldest first. */
  sockets: Map<number, Held>;
  /** How many of them have completed no request. */
  unserved: number;
}

/** `::ffff:10.0.0.1` (an IPv4 client of a dual-stack listener) as `10.0.0.1`. */
export function normalizeAddress(address: string): string {
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}

export interface ConnectionLimitsOptions {
  maxConnections: number;
  maxConnectionsPerAddress: number;
}

export class ConnectionLimits {
  private readonly max: number;
  private readonly perAddress: number;
  private readonly byAddress = new Map<string, AddressConnections>();
  private readonly count: Record<ConnectionKind, number> = { apiserver: 0, other: 0 };
  /** What was refused and closed since the last line, by kind. */
  private readonly refused: Record<ConnectionKind, number> = { apiserver: 0, other: 0 };
  private readonly shed: Record<ConnectionKind, number> = { apiserver: 0, other: 0 };
  /** Why, the latest of each kind: the cause the line gives. */
  private readonly causes: Partial<Record<ConnectionKind, string>> = {};
  /** The warnings of limits neared since the last line, by kind. */
  private readonly nearing: Partial<Record<ConnectionKind, string>> = {};
  private logTimer: NodeJS.Timeout | undefined;

  private readonly sizing: ConnectionSizing;
  private readonly log: LogWriter;
  private readonly onChange: (counts: ConnectionCounts) => void;
  private readonly onNearing: (kind: ConnectionKind, cause: string) => void;

  /** `onNearing` is told each warning as it is logged (at most once per LOG_MS): the operator raises an Event from it. */
  constructor(limits: ConnectionLimitsOptions, sizing: ConnectionSizing, log: LogWriter, onChange: (counts: ConnectionCounts) => void = () => undefined, onNearing: (kind: ConnectionKind, cause: string) => void = () => undefined) {
    this.sizing = sizing;
    this.log = log;
    this.onChange = onChange;
    this.onNearing = onNearing;
    this.max = limits.maxConnections;
    this.perAddress = Math.min(limits.maxConnectionsPerAddress, limits.maxConnections);
  }

  /** What one API server address may hold: the others' share, and CONNECTIONS_PER_WEBHOOK per webhook served. */
  apiServerAllowance(): number {
    return this.perAddress + CONNECTIONS_PER_WEBHOOK * this.sizing.webhooks();
  }

  counts(): ConnectionCounts {
    return {
      apiserver: this.count.apiserver,
      other: this.count.other,
      apiserverLimit: this.apiServerAllowance() * Math.max(1, this.sizing.apiServerAddresses()),
      otherLimit: this.max,
    };
  }

  /** Runs before the TLS server sees `socket`: a connection refused is destroyed (the TLS server then drops it). */
  readonly admit = (socket: Socket): void => {
    const address = normalizeAddress(socket.remoteAddress ?? '');
    const kind: ConnectionKind = this.sizing.isApiServer(address) ? 'apiserver' : 'other';
    let held = this.byAddress.get(address);
    // The API server's addresses changed (an EndpointSlice update): the address's connections are counted as its kind now.
    if (held && held.kind !== kind) this.recount(held, kind);
    const holding = held?.sockets.size ?? 0;
    if (kind === 'apiserver') {
      const allowance = this.apiServerAllowance();
      if (holding >= allowance && !this.shedFrom(held!)) {
        return this.refuse(
          socket,
          kind,
          `the API server's address ${address} holds ${holding} connections, all of which have served requests: its allowance is ${allowance} (${CONNECTIONS_PER_WEBHOOK} per webhook served, and ${this.perAddress})`,
        );
      }
      this.nearing.apiserver =
        holding + 1 >= WARN_AT * allowance
          ? `the API server's address ${address} holds ${holding + 1} of its allowance of ${allowance} connections (${CONNECTIONS_PER_WEBHOOK} per webhook served, and ${this.perAddress}); beyond it, connections from there that have served no request are closed, then new ones refused`
          : this.nearing.apiserver;
    } else {
      if (holding >= this.perAddress) return this.refuse(socket, kind, `${address} holds ${holding} connections, its share of ${this.perAddress} (--max-connections-per-address)`);
      if (this.count.other >= this.max && !this.makeRoom(holding + 1)) {
        return this.refuse(socket, kind, `${this.count.other} connections from addresses other than the API server's reached the cap of ${this.max}, and none holding more than ${address} has one that served no request`);
      }
      if (this.count.other + 1 >= WARN_AT * this.max)
        this.nearing.other = `${this.count.other + 1} connections from addresses other than the API server's, of the cap of ${this.max}; beyond it, connections that have served no request are closed, then new ones refused`;
      else if (holding + 1 >= WARN_AT * this.perAddress) this.nearing.other = `${address} holds ${holding + 1} connections of its share of ${this.perAddress} (--max-connections-per-address); beyond it, its new connections are refused`;
    }
    if (!held) this.byAddress.set(address, (held = { kind, sockets: new Map(), unserved: 0 }));
    const port = socket.remotePort ?? 0;
    const entry: Held = { socket, address, kind, served: false };
    held.sockets.set(port, entry);
    held.unserved++;
    this.count[kind]++;
    socket.on('close', () => this.forget(entry, port));
    if (this.nearing[kind]) this.logSoon();
    this.onChange(this.counts());
  };

  /** The TLS socket of a connection admitted: linked, so that its answers mark it (served()). */
  readonly secured = (tlsSocket: Socket): void => {
    const held = this.byAddress.get(normalizeAddress(tlsSocket.remoteAddress ?? ''))?.sockets.get(tlsSocket.remotePort ?? 0);
    if (held) (tlsSocket as unknown as Record<symbol, Held>)[HELD] = held;
  };

  /** A request answered on the connection of `tlsSocket`: from now on it is never closed to make room. */
  served(tlsSocket: Socket | null | undefined): void {
    const held = (tlsSocket as unknown as Record<symbol, Held | undefined> | null | undefined)?.[HELD];
    if (!held || held.served) return;
    held.served = true;
    const connections = this.byAddress.get(held.address);
    if (connections) connections.unserved--;
  }

  private recount(connections: AddressConnections, kind: ConnectionKind): void {
    this.count[connections.kind] -= connections.sockets.size;
    this.count[kind] += connections.sockets.size;
    for (const held of connections.sockets.values()) held.kind = kind;
    connections.kind = kind;
  }

  private refuse(socket: Socket, kind: ConnectionKind, cause: string): void {
    this.refused[kind]++;
    this.causes[kind] = cause;
    this.logSoon();
    socket.destroy();
  }

  /** Closes the oldest connection of `connections` that has served no request, if there is one. */
  private shedFrom(connections: AddressConnections): boolean {
    if (connections.unserved === 0) return false;
    for (const [port, held] of connections.sockets) {
      if (held.served) continue;
      this.forget(held, port);
      held.socket.destroy();
      this.shed[held.kind]++;
      this.logSoon();
      return true;
    }
    return false;
  }

  /** Makes room among the others: from the address holding the most of those with a connection that served no request, if it holds more than `holding`. */
  private makeRoom(holding: number): boolean {
    let most: AddressConnections | undefined;
    for (const connections of this.byAddress.values()) {
      if (connections.kind !== 'other' || connections.unserved === 0) continue;
      if (!most || connections.sockets.size > most.sockets.size) most = connections;
    }
    if (!most || most.sockets.size <= holding) return false;
    return this.shedFrom(most);
  }

  private forget(held: Held, port: number): void {
    const connections = this.byAddress.get(held.address);
    if (connections?.sockets.get(port) !== held) return;
    connections.sockets.delete(port);
    if (!held.served) connections.unserved--;
    this.count[held.kind]--;
    if (connections.sockets.size === 0) this.byAddress.delete(held.address);
    this.onChange(this.counts());
  }

  /** What was done and is not logged yet, logged now (the server closes). */
  flush(): void {
    if (this.logTimer) this.logNow();
  }

  private logSoon(): void {
    // A limit neared is said at once (once per LOG_MS at most): it is the warning before anything is refused.
    if ((this.nearing.apiserver || this.nearing.other) && Date.now() >= this.warnedUntil) {
      this.warnedUntil = Date.now() + LOG_MS;
      this.logNearing();
    }
    if (this.refused.apiserver + this.refused.other + this.shed.apiserver + this.shed.other > 0) this.logTimer ??= setTimeout(() => this.logNow(), LOG_MS).unref();
  }

  /** Until when no other nearing warning is logged (ms since the epoch). */
  private warnedUntil = 0;

  private logNearing(): void {
    for (const kind of ['apiserver', 'other'] as const) {
      const near = this.nearing[kind];
      if (near) {
        this.log.warn('connections near the connection limits', { kind, cause: near });
        this.onNearing(kind, near);
      }
      this.nearing[kind] = undefined;
    }
  }

  private logNow(): void {
    clearTimeout(this.logTimer);
    this.logTimer = undefined;
    for (const kind of ['apiserver', 'other'] as const) {
      if (this.refused[kind] + this.shed[kind] === 0) continue;
      this.log.warn('connections refused at the connection limits', {
        kind,
        refused: this.refused[kind],
        closedToMakeRoom: this.shed[kind],
        connections: this.count[kind],
        ...(this.causes[kind] ? { cause: this.causes[kind] } : {}),
      });
      this.refused[kind] = this.shed[kind] = 0;
      this.causes[kind] = undefined;
    }
  }
}
