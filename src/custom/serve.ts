/**
 * Handler modules offered to the suites of the operator's main thread: each handler served by its
 * module's worker (runner.ts), its failures counted by handler (the admission thread's side is
 * forward.ts). Owns that wiring and the failures metric; loading is modules.ts's, running runner.ts's.
 */
import client from 'prom-client';
import type { AdmissionSuite } from '../api/types.ts';
import type { LogWriter } from '../log.ts';
import { loadHandlerModules } from './modules.ts';
import { registerCustomHandlers } from '../handlers/module-handlers.ts';
import { HandlerRunner, type FailureReason, type RunnerOptions } from './runner.ts';

export interface HandlerModules {
  /** The handlers served, by name. */
  names: string[];
  /** Why a webhook of the suite is not served: its handler, with the config it gives it, is quarantined (runner.ts); undefined when none is. */
  quarantined(suite: AdmissionSuite): string | undefined;
  /** Calls `listener` with a handler's name each time it is quarantined with a config. */
  onQuarantined(listener: (handler: string) => void): void;
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
    help: "Requests a handler module's handler did not answer, answered by the webhook's failurePolicy: reason=error (it threw or rejected), timeout (past its budget), lost (its worker was stopped under it, or is being started again), quarantined (the handler with this config kept stopping its worker).",
    labelNames: ['handler', 'reason'],
    registers: options.registry ? [options.registry] : [],
  });
  const listeners: ((handler: string) => void)[] = [];
  const runner = new HandlerRunner({
    budgetMs: options.budgetMs,
    log,
    lookups: options.lookups,
    failed: (handler: string, reason: FailureReason) => failures.inc({ handler, reason }),
    quarantined: (handler) => listeners.forEach((listener) => listener(handler)),
  });
  const handlers = loaded.map((l) => runner.proxy(l));
  registerCustomHandlers(handlers);
  runner.warm();
  const names = handlers.map((h) => h.name);
  log.info('handler modules loaded', { dir, handlers: names, refused: refused.length, budgetMs: options.budgetMs });
  const served = new Set(names);
  return {
    names,
    quarantined: (suite) => {
      const held = suite.spec.webhooks.flatMap((w) => {
        const why = w.handler && served.has(w.handler.name) ? runner.quarantined(w.handler.name, w.handler.config) : undefined;
        return why ? [`webhook ${w.name}: ${why}`] : [];
      });
      return held.length > 0 ? held.join('; ') : undefined;
    },
    onQuarantined: (listener) => void listeners.push(listener),
    close: async () => {
      registerCustomHandlers([]);
      await runner.close();
    },
  };
}
