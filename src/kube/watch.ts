/**
 * Watches with a local cache, restarted with backoff when the stream breaks (an API server
 * restart must not leave a replica blind).
 */
import * as k8s from '@kubernetes/client-node';
import type { Logger } from '../log.ts';
import { describeError } from './client.ts';

export interface WatchedCache<T extends k8s.KubernetesObject> {
  list(): T[];
  get(name: string, namespace?: string): T | undefined;
  /** Resolves once the first list has arrived. */
  synced: Promise<void>;
  stop(): Promise<void>;
}

export interface WatchOptions<T extends k8s.KubernetesObject> {
  path: string;
  list: () => Promise<k8s.KubernetesListObject<T>>;
  labelSelector?: string;
  onChange: (object: T, deleted: boolean) => void;
  log: Logger;
}

const MAX_RESTART_DELAY_MS = 10_000;

export function watchCache<T extends k8s.KubernetesObject>(config: k8s.KubeConfig, options: WatchOptions<T>): WatchedCache<T> {
  const informer = k8s.makeInformer<T>(config, options.path, options.list, options.labelSelector);
  let stopped = false;
  let failures = 0;
  let markSynced!: () => void;
  const synced = new Promise<void>((resolve) => (markSynced = resolve));

  informer.on('add', (object) => options.onChange(object, false));
  informer.on('update', (object) => options.onChange(object, false));
  informer.on('delete', (object) => options.onChange(object, true));
  informer.on('connect', () => {
    failures = 0;
  });
  informer.on('error', (err) => {
    if (stopped) return;
    failures += 1;
    const delay = Math.min(MAX_RESTART_DELAY_MS, 500 * 2 ** Math.min(failures, 8)) * (0.5 + Math.random() / 2);
    options.log.warn('watch broke; restarting', { path: options.path, error: describeError(err), delayMs: Math.round(delay) });
    setTimeout(() => {
      if (!stopped) void start();
    }, delay).unref();
  });

  const start = async () => {
    try {
      await informer.start();
      markSynced();
    } catch {
      // the informer reports the failure through its 'error' event, which restarts it
    }
  };
  void start();

  return {
    list: () => [...informer.list()],
    get: (name, namespace) => informer.get(name, namespace),
    synced,
    stop: async () => {
      stopped = true;
      await informer.stop();
    },
  };
}
