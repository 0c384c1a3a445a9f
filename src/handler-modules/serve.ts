/**
 * Handler modules offered to the suites of the operator's main thread: each handler served by its
 * module's worker (runner.ts), its failures counted by handler (the admission thread's side is
 * forward.ts). Owns that wiring and the failures metric; loading is modules.ts's, running runner.ts's.
 */
import client from 'prom-client';
import type { LogWriter } from '../log.ts';
import { loadHandlerModules } from './modules.ts';
import { registerCustomHandlers } from '../handlers/module-handlers.ts';
import { HandlerRunner, type FailureReason, type RunnerOptions } from './runner.ts';

export interface HandlerModules {
  /** The handlers served, by name. */
  names: string[];
  /** Calls `listener` each time a module's worker dies (it is started again; runner.ts). */
  onDied(listener: () => void): void;
  close(): Promise<void>;
}

/**
 * Loads the modules in `dir` and serves their handlers from this (the main) thread's registry. A
 * refused module is one error line naming it and why; the others are served.
 */
export async function startHandlerModules(dir: string, options: { budgetMs: number; log: LogWriter; registry?: client.Registry; lookups?: RunnerOptions['lookups'] }): Promise<HandlerModules> {
  const { log } = options;
  const { loaded, refused } = await loadHandlerModules(dir);
  for (const { module, reason } of refused) log.error('handler module refused', { module, reason });
  const failures = new client.Counter({
    name: 'portcullis_handler_module_failures_total',
    help: "Requests a handler module's handler did not answer, answered by the webhook's failurePolicy: reason=error (it threw or rejected), timeout (past its budget), lost (its worker was stopped under it, or is being started again).",
    labelNames: ['handler', 'reason'],
    registers: options.registry ? [options.registry] : [],
  });
  const listeners: (() => void)[] = [];
  const runner = new HandlerRunner({
    budgetMs: options.budgetMs,
    log,
    lookups: options.lookups,
    failed: (handler: string, reason: FailureReason) => failures.inc({ handler, reason }),
    died: () => listeners.forEach((listener) => listener()),
  });
  const handlers = loaded.map((l) => runner.proxy(l));
  registerCustomHandlers(handlers);
  runner.warm();
  const names = handlers.map((h) => h.name);
  log.info('handler modules loaded', { dir, handlers: names, refused: refused.length, budgetMs: options.budgetMs });
  return {
    names,
    onDied: (listener) => void listeners.push(listener),
    close: async () => {
      registerCustomHandlers([]);
      await runner.close();
    },
  };
}
