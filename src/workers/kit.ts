/**
 * The one way the operator runs a worker thread, for every kind (review, tenant, handler-module
 * workers, the admission thread): start it, replay its state, call it with matched replies, learn
 * what was in it when it died, and start it again with backoff. What a death blames is the kind's.
 */
import { Worker, type ResourceLimits } from 'node:worker_threads';
import { Backoff, type BackoffOptions } from './restarts.ts';

/** What the worker says before work that might kill it, and after: a death in between blames `key`. */
export type KitSignal = { type: 'kit-suspect'; key: string } | { type: 'kit-cleared'; key: string };

/** A message sent as a call: the kit numbers it; the reply carries the same id. */
export type Call<In> = In extends { id: number } ? Omit<In, 'id'> : never;

/** A call's worker stopped before it replied: `message` is the kind's words for the death. */
export class WorkerLost extends Error {}

/** A call not replied to within its timeout (the worker may still be running it). */
export class CallTimeout extends Error {}

/** How a worker ended: failed (an uncaught error), exited, or stopped by us (`stopped`: why). */
export type DeathCause = { error: Error } | { exitCode: number } | { stopped: string };

/** What a kind reads of a death to blame (its rules) and report it. */
export interface Death<Tag> {
  cause: DeathCause;
  /** The kind's words for it (describe(cause)); the pending calls were rejected with them. */
  why: string;
  /** What it last said it was doing and had not finished (KitSignal's key). */
  suspect: string | undefined;
  /** The calls that were pending, with the tags they were made with (untagged calls left out). */
  calls: { id: number; tag: Tag }[];
  /** The tags given to stop() as the culprits (a worker stopped for blocking), if any. */
  blamed: Tag[] | undefined;
}

/**
 * The state every worker of a kind holds (the suites, the policies): a message per key, sent to the
 * workers alive as it changes and replayed, in order, to each worker as it starts.
 */
export class StateLog<In> {
  private readonly entries = new Map<string, In>();
  private readonly live = new Set<(message: In) => void>();

  /** Keeps `message` as `key`'s state and sends it to every worker alive. */
  put(key: string, message: In): void {
    this.entries.set(key, message);
    this.send(message);
  }

  /** Drops `key`'s state (a new worker is not told of it) and sends `message` (its removal) to every worker alive. */
  drop(key: string, message: In): void {
    this.entries.delete(key);
    this.send(message);
  }

  /** Sends `message` to every worker alive without keeping it (the kind replays its source itself). */
  send(message: In): void {
    for (const post of this.live) post(message);
  }

  /** A worker started: it is sent the log now, and each change until the returned function is called. */
  attach(post: (message: In) => void): () => void {
    for (const message of this.entries.values()) post(message);
    this.live.add(post);
    return () => this.live.delete(post);
  }
}

export interface ThreadOptions<In, Out, Tag> {
  entry: URL;
  workerData?: unknown;
  resourceLimits?: ResourceLimits;
  /** Replayed to the worker as it starts, and its changes sent on. */
  state?: StateLog<In>;
  /** Called once it is started and replayed: what else it is sent; the function returned is called at its death. */
  started?(post: (message: In) => void): (() => void) | void;
  /** The types of the messages that reply to a call (by its id); every other message goes to `receive`. */
  replies: readonly string[];
  receive(message: Exclude<Out, KitSignal>): void;
  /** When given, an uncaught error in the worker is told here, and its death is its exit that follows (with the exit code). */
  failed?(error: Error): void;
  /** The kind's words for a death (the pending calls are rejected with a WorkerLost saying them). */
  describe(cause: DeathCause): string;
  /** Told once, after the pending calls are rejected. */
  died(death: Death<Tag>): void;
}

interface Pending<Out, Tag> {
  tag: Tag | undefined;
  resolve(reply: Out): void;
  reject(err: Error): void;
  timer: NodeJS.Timeout | undefined;
}

/**
 * One started worker. Does not keep the process alive (its users' sockets and timers do). Its
 * death is reported once, whichever of 'error', 'exit' or stop() comes first.
 */
export class WorkerThread<In extends { type: string }, Out extends { type: string }, Tag = never> {
  private readonly options: ThreadOptions<In, Out, Tag>;
  private readonly worker: Worker;
  private readonly pending = new Map<number, Pending<Out, Tag>>();
  private next = 1;
  private suspect: string | undefined;
  private detach: (() => void)[] = [];
  private dead = false;

  constructor(options: ThreadOptions<In, Out, Tag>) {
    this.options = options;
    const worker = new Worker(options.entry, { workerData: options.workerData, resourceLimits: options.resourceLimits });
    this.worker = worker;
    const post = (message: In) => this.post(message);
    if (options.state) this.detach.push(options.state.attach(post));
    const undo = options.started?.(post);
    if (undo) this.detach.push(undo);
    worker.unref();
    worker.on('message', (message: Out | KitSignal) => this.received(message));
    worker.on('error', (error) => (options.failed ? options.failed(error) : this.ended({ error })));
    worker.on('exit', (exitCode) => this.ended({ exitCode }));
  }

  get alive(): boolean {
    return !this.dead;
  }

  get threadId(): number {
    return this.worker.threadId;
  }

  /** Sends a message that is not a call (no reply is matched to it). */
  post(message: In): void {
    if (!this.dead) this.worker.postMessage(message);
  }

  /**
   * Sends `message` with a new id; resolves with the worker's reply (a message of a `replies` type
   * with that id), rejects with CallTimeout past `timeoutMs`, with WorkerLost when the worker dies
   * first. Throws (DataCloneError) when the message cannot cross threads. `tag` is what its
   * death would blame, as the kind sees it.
   */
  call(message: Call<In>, options: { timeoutMs?: number; tag?: Tag; onTimeout?: () => void } = {}): { id: number; reply: Promise<Out> } {
    const id = this.next++;
    if (this.dead) return { id, reply: Promise.reject(new WorkerLost('the worker stopped')) };
    this.worker.postMessage({ ...message, id });
    const reply = new Promise<Out>((resolve, reject) => {
      const timer = options.timeoutMs === undefined ? undefined : setTimeout(() => this.settle(id)?.reject(new CallTimeout(`no reply within ${options.timeoutMs} ms`)), options.timeoutMs);
      this.pending.set(id, { tag: options.tag, resolve, reject, timer });
    });
    return { id, reply };
  }

  /** Ends the worker as an exit would: its death is reported by its 'exit' (exit code 1). */
  terminate(): Promise<number> {
    return this.worker.terminate();
  }

  /** Stops the worker: its death is reported now (cause `stopped`, blaming `blamed` if given). */
  stop(why: string, blamed?: Tag[]): Promise<number> {
    this.ended({ stopped: why }, blamed);
    return this.worker.terminate();
  }

  private received(message: Out | KitSignal): void {
    if (message.type === 'kit-suspect') {
      this.suspect = (message as KitSignal).key;
      return;
    }
    if (message.type === 'kit-cleared') {
      if (this.suspect === (message as KitSignal).key) this.suspect = undefined;
      return;
    }
    if (this.options.replies.includes(message.type)) {
      this.settle((message as unknown as { id: number }).id)?.resolve(message as Out);
      return;
    }
    this.options.receive(message as Exclude<Out, KitSignal>);
  }

  private settle(id: number): Pending<Out, Tag> | undefined {
    const waiting = this.pending.get(id);
    if (!waiting) return undefined;
    this.pending.delete(id);
    clearTimeout(waiting.timer);
    return waiting;
  }

  private ended(cause: DeathCause, blamed?: Tag[]): void {
    if (this.dead) return;
    this.dead = true;
    for (const undo of this.detach.splice(0)) undo();
    const why = this.options.describe(cause);
    const calls: Death<Tag>['calls'] = [];
    for (const id of [...this.pending.keys()]) {
      const waiting = this.settle(id)!;
      if (waiting.tag !== undefined) calls.push({ id, tag: waiting.tag });
      waiting.reject(new WorkerLost(why));
    }
    this.options.died({ cause, why, suspect: this.suspect, calls, blamed });
  }
}

/** The worker's side of the kit: says what it is about to do, so that a death in it blames the right input. */
export function signals(post: (message: KitSignal) => void) {
  return {
    suspect: (key: string) => post({ type: 'kit-suspect', key }),
    cleared: (key: string) => post({ type: 'kit-cleared', key }),
  };
}

/**
 * A kind with one worker at a time (a handler module's, the admission thread): started on demand,
 * and after a death started again at once, then with backoff while it keeps dying.
 */
export class Restarting<T extends { alive: boolean }> {
  private readonly backoff: Backoff;
  private readonly start: () => T;
  /** Whether the first restart in a row starts the worker before died() returns (else from a timer, as later ones). */
  private readonly atOnce: boolean;
  private current: T | undefined;
  private restart: { at: number; timer: NodeJS.Timeout } | undefined;
  private closed = false;

  constructor(options: Partial<BackoffOptions> | undefined, start: () => T, atOnce = true) {
    this.backoff = new Backoff(options);
    this.start = start;
    this.atOnce = atOnce;
  }

  /** The worker, started if there is none; undefined while one that died waits to be started again (or after close). */
  ensure(): T | undefined {
    if (this.current?.alive) return this.current;
    if (this.restart) return undefined;
    this.closed = false;
    this.current = this.start();
    this.backoff.started();
    return this.current;
  }

  /** The worker alive now, without starting one. */
  get alive(): T | undefined {
    return this.current?.alive ? this.current : undefined;
  }

  /** Its worker died: started again at once the first time in a row (returns 0), else after the returned wait. */
  died(): number {
    this.current = undefined;
    if (this.closed) return 0;
    const wait = this.backoff.died();
    if (wait === 0 && this.atOnce) {
      this.ensure();
      return 0;
    }
    this.restart = {
      at: Date.now() + wait,
      timer: setTimeout(() => {
        this.restart = undefined;
        this.ensure();
      }, wait),
    };
    this.restart.timer.unref();
    return wait;
  }

  /** Its worker died and is not started again (until ensure() is called). */
  lost(): void {
    this.current = undefined;
  }

  /** How long until a worker that died is started again; undefined when none waits. */
  get restartInMs(): number | undefined {
    return this.restart && Math.max(0, this.restart.at - Date.now());
  }

  /** Deaths in a row so far (for logs). */
  get deaths(): number {
    return this.backoff.deaths;
  }

  /** A worker that dies from now on is not started again (until ensure() starts one); a pending restart is cancelled. */
  close(): void {
    this.closed = true;
    if (this.restart) clearTimeout(this.restart.timer);
    this.restart = undefined;
  }

  /** True after close(), until ensure() starts a worker again. */
  get isClosed(): boolean {
    return this.closed;
  }
}
