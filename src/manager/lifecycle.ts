/**
 * manager: the order the operator's parts start and stop in, as controller-runtime's manager
 * (pkg/manager/runnable_group.go): caches, every-replica runnables, then, once the caches have synced,
 * the leader elector, which turns the leader-only runnables on and off. Stopped in reverse. Makes no part.
 */

/** A part with a life: started in its group's turn, stopped in the reverse. */
export interface Runnable {
  name: string;
  start?(): void | Promise<void>;
  /** A cache: resolves once it has listed what it watches. The elector starts once every cache's has. */
  synced?: Promise<unknown>;
  /** This replica started or stopped leading: a leader-only runnable acts only while it leads. */
  leading?(leading: boolean): void;
  stop(): void | Promise<void>;
}

export interface Groups {
  /** What every replica reads; synced before the elector starts. */
  caches: Runnable[];
  /** What every replica runs, whether or not it leads: the servers, the queue that follows the leader. */
  everyReplica: Runnable[];
  /** The writers: on only while this replica leads. */
  leaderOnly: Runnable[];
}

export interface Elector {
  start(): void | Promise<void>;
  stop(): Promise<void>;
  isLeader(): boolean;
}

export class Lifecycle {
  readonly elector: Elector;
  private readonly groups: Groups;
  private stopped = false;
  private handedOver?: Promise<void>;

  /** `elect` makes the elector, given what it tells of leadership changes (every runnable's `leading`). */
  constructor(groups: Groups, elect: (leading: (leading: boolean) => void) => Elector) {
    this.groups = groups;
    this.elector = elect((leading) => {
      for (const runnable of [...groups.leaderOnly, ...groups.everyReplica]) runnable.leading?.(leading);
    });
  }

  /** Starts the caches, then every replica's runnables; the elector once the caches have synced (not awaited). */
  async start(): Promise<void> {
    const { caches, everyReplica } = this.groups;
    for (const runnable of [...caches, ...everyReplica]) await runnable.start?.();
    // A replica that led with empty caches would take every suite for deleted.
    void Promise.all(caches.map((cache) => cache.synced)).then(() => {
      if (!this.stopped) void this.elector.start();
    });
  }

  /** The writers stopped and leadership handed over, the servers still answering: the first step of a graceful stop. */
  handOver(): Promise<void> {
    this.stopped = true;
    this.handedOver ??= (async () => {
      for (const runnable of [...this.groups.leaderOnly].reverse()) await runnable.stop();
      await this.elector.stop();
    })();
    return this.handedOver;
  }

  /** The writers first (handOver), the servers after, the caches last. */
  async stop(): Promise<void> {
    const { caches, everyReplica } = this.groups;
    await this.handOver();
    for (const runnable of [...everyReplica].reverse()) await runnable.stop();
    for (const runnable of [...caches].reverse()) await runnable.stop();
  }
}
