/**
 * The handlers of modules (--handler-modules) this isolate serves, by name: what findHandler
 * (handlers/registry.ts) offers beside the built-ins. Filled once at start by whoever loaded the
 * modules (the operator's main thread with handlers that run in a worker, the admission thread
 * with handlers that forward to the main thread); empty otherwise, so nothing is asked of it
 * per request. Owns the map only: it must not load, run or judge anything.
 */
import type { Handler } from './handler.ts';

const custom = new Map<string, Handler<any, any>>();

/** Serves exactly `handlers` from now on (an empty list: none). */
export function registerCustomHandlers(handlers: Handler<any, any>[]): void {
  custom.clear();
  for (const handler of handlers) custom.set(handler.name, handler);
}

export function customHandler(name: string): Handler<any, any> | undefined {
  return custom.get(name);
}

export function customHandlerNames(): string[] {
  return [...custom.keys()];
}
