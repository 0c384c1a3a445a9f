/**
 * Watches with a local cache, restarted with backoff when the stream breaks (an API server
 * restart must not leave a replica blind). A cache is synced only once a list has really
 * arrived: client-node's informer reports a failed list as an event, not by throwing.
 */
import * as k8s from '@kubernetes/client-node';
import type { Logger } from '../log.ts';
import { describeError } from './client.ts';
import { backoffMs, type BackoffPolicy } from './backoff.ts';

export interface WatchedCache<T extends k8s.KubernetesObject> {
  /** Every object, or those of one namespace. */
  list(namespace?: string): T[];
  get(name: string, namespace?: string): T | undefined;
  /** Resolves once the first list has arrived. */
  synced: Promise<void>;
  /** Why the latest list or watch failed (an API error, often 403), until one succeeds again. */
  failure(): unknown;
  stop(): Promise<void>;
}

export interface WatchOptions<T extends k8s.KubernetesObject> {
  path: string;
  list: () => Promise<k8s.KubernetesListObject<T>>;
  labelSelector?: string;
  onChange: (object: T, deleted: boolean) => void;
  log: Logger;
}

/** Restarts of a broken watch or a failed list, growing with consecutive failures until one succeeds. */
export const WATCH_RESTART: BackoffPolicy = { baseMs: 500, maxMs: 10_000 };

/** A cache made but not yet watching: `start` gives it where its events go, and starts it (once). */
export interface UnstartedCache<T extends k8s.KubernetesObject> extends WatchedCache<T> {
  start(onChange: (object: T, deleted: boolean) => void): void;
}

export function watchCache<T extends k8s.KubernetesObject>(config: k8s.KubeConfig, options: WatchOptions<T>): WatchedCache<T> {
  const cache = makeCache(config, options);
  cache.start(options.onChange);
  return cache;
}

/**
 * A cache readable at once (empty) that watches only once started: what its events wake may be
 * made after it (the operator's own kinds, started in its lifecycle, src/manager/lifecycle.ts).
 */
export function makeCache<T extends k8s.KubernetesObject>(config: k8s.KubeConfig, options: Omit<WatchOptions<T>, 'onChange'>): UnstartedCache<T> {
  const informer = k8s.makeInformer<T>(config, options.path, options.list, options.labelSelector);
  let stopped = false;
  let failures = 0;
  // Which start() an error belongs to: the informer reports a failed list or watch as an event
  // during start(), which itself resolves.
  let attempt = 0;
  let lastFailedAttempt = -1;
  let failure: unknown;
  let markSynced!: () => void;
  const synced = new Promise<void>((resolve) => (markSynced = resolve));

  informer.on('error', (err) => {
    if (stopped) return;
    lastFailedAttempt = attempt;
    failure = err;
    failures += 1;
    const delay = backoffMs(failures, WATCH_RESTART);
    options.log.warn('watch broke; restarting', { path: options.path, error: describeError(err), failures, delayMs: Math.round(delay) });
    setTimeout(() => {
      if (!stopped) void run();
    }, delay).unref();
  });

  const run = async () => {
    const current = ++attempt;
    try {
      await informer.start();
    } catch {
      // the informer reports the failure through its 'error' event, which restarts it
    }
    // Listed (or, on a restart, still listed) and watching: a success resets the backoff.
    if (lastFailedAttempt !== current && !stopped) {
      failures = 0;
      failure = undefined;
      markSynced();
    }
  };
  let started = false;

  return {
    start: (onChange) => {
      if (started || stopped) return;
      started = true;
      informer.on('add', (object) => onChange(object, false));
      informer.on('update', (object) => onChange(object, false));
      informer.on('delete', (object) => onChange(object, true));
      void run();
    },
    list: (namespace) => [...informer.list(namespace)],
    get: (name, namespace) => informer.get(name, namespace),
    synced,
    failure: () => failure,
    stop: async () => {
      stopped = true;
      await informer.stop();
    },
  };
}
