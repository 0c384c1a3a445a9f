/**
 * workers: what every worker kind shares when one dies: when it starts again (Backoff; PoolRestarts for
 * pools) and which input keeps killing it (Quarantine: QUARANTINE_AFTER deaths with it inside, then it is
 * sent no more until it changes). Counting and timing only: each kind knows what its inputs are.
 */

export interface BackoffOptions {
  /** The wait before the second restart in a row (the first is at once). */
  initialMs: number;
  /** The longest wait: a worker that keeps dying is still started again this often. */
  maxMs: number;
  /** A worker that lived this long before it died starts the count again (its death is not "in a row"). */
  stableMs: number;
}

/** Why these figures: docs/adr/0013-worker-restart-backoff.md */
export const RESTART_BACKOFF: BackoffOptions = { initialMs: 100, maxMs: 10_000, stableMs: 30_000 };

export class Backoff {
  private readonly options: BackoffOptions;
  private inARow = 0;
  private startedAt = 0;
  private readonly now: () => number;

  constructor(options: Partial<BackoffOptions> = {}, now: () => number = Date.now) {
    this.options = { ...RESTART_BACKOFF, ...options };
    this.now = now;
  }

  /** A worker was started now. */
  started(): void {
    this.startedAt = this.now();
  }

  /** The worker died: how long to wait before starting the next one. */
  died(): number {
    if (this.startedAt !== 0 && this.now() - this.startedAt >= this.options.stableMs) this.inARow = 0;
    const wait = this.inARow === 0 ? 0 : Math.min(this.options.maxMs, this.options.initialMs * 2 ** (this.inARow - 1));
    this.inARow++;
    return wait;
  }

  /** Deaths in a row so far (for logs). */
  get deaths(): number {
    return this.inARow;
  }
}

/** Deaths attributed to one input before it is quarantined. */
export const QUARANTINE_AFTER = 3;

/**
 * Inputs that killed their worker, by key (the caller's: an input's identity and generation, so
 * that a changed input is a new key and starts from nothing).
 */
export class Quarantine {
  private readonly after: number;
  private readonly deaths = new Map<string, number>();
  private readonly held = new Map<string, string>();

  constructor(after = QUARANTINE_AFTER) {
    this.after = after;
  }

  /**
   * The worker died with `key`'s input in it; true when that makes it quarantined (now, not
   * before). `why` is what the status and the answers say.
   */
  died(key: string, why: string): boolean {
    if (this.held.has(key)) return false;
    const deaths = (this.deaths.get(key) ?? 0) + 1;
    this.deaths.set(key, deaths);
    if (deaths < this.after) return false;
    this.hold(key, `it stopped its worker ${deaths} times (last: ${why})`);
    return true;
  }

  /** Quarantined at once (an input that throws where it must not: it would throw again). */
  hold(key: string, why: string): void {
    this.deaths.delete(key);
    this.held.set(key, why);
  }

  /** Why `key` is quarantined; undefined when it is not. */
  why(key: string): string | undefined {
    return this.held.get(key);
  }

  /** Forgets every key `drop` selects (inputs removed or changed). */
  forget(drop: (key: string) => boolean): void {
    for (const map of [this.deaths, this.held]) for (const key of [...map.keys()]) if (drop(key)) map.delete(key);
  }

  get size(): number {
    return this.held.size;
  }
}

/** The operator's kinds of worker thread, as the metrics name them. */
export type WorkerKind = 'admission-thread' | 'review' | 'tenant' | 'handler-module';

/** Told of a pool's workers: each death, and each input quarantined (`input`: a suite's or policy's name). */
export interface WorkerWatcher {
  died?(kind: WorkerKind): void;
  quarantined?(kind: WorkerKind, input: string): void;
}

/**
 * The restarts of a pool of workers (review workers, tenant workers): after a death, no new worker
 * is started until the backoff's wait is over (the surviving workers keep serving), and then one
 * is started at once by `restart`, whether or not a request is waiting for it.
 */
export class PoolRestarts {
  private readonly backoff: Backoff;
  private readonly restart: () => void;
  private timer: NodeJS.Timeout | undefined;

  constructor(options: Partial<BackoffOptions> | undefined, restart: () => void) {
    this.backoff = new Backoff(options);
    this.restart = restart;
  }

  /** A worker was started now. */
  started(): void {
    this.backoff.started();
  }

  /** A worker died: `restart` is called after the backoff's wait (at once the first time in a row); returns the wait. */
  died(): number {
    const wait = this.backoff.died();
    clearTimeout(this.timer);
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.restart();
    }, wait);
    // The pool's workers do not keep the process alive; neither does waiting to start one.
    this.timer.unref();
    return wait;
  }

  /** True while a backoff's wait runs: no worker is started meanwhile. */
  get waiting(): boolean {
    return this.timer !== undefined;
  }

  /** Deaths in a row so far (for logs). */
  get deaths(): number {
    return this.backoff.deaths;
  }

  close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
  }
}
