/**
 * Handler modules in the admission thread: each handler known by name and config checks, so an
 * apply is refused there as on the main thread, but every request it gets is answered by the main
 * thread (HeldElsewhere: forwarded whole), which runs it in its module's worker (serve.ts). Kept
 * apart from serve.ts so the thread loads no metrics library. Must not run a handler's sides.
 */
import { HeldElsewhere, type Handler } from '../handlers/handler.ts';
import { configChecks, loadHandlerModules } from './modules.ts';
import { registerCustomHandlers } from '../handlers/module-handlers.ts';

/** The admission thread's: the modules' handlers known by name and config, each request forwarded to the main thread. */
export async function forwardHandlerModules(dir: string): Promise<void> {
  const { loaded } = await loadHandlerModules(dir);
  const held = (name: string) => () => {
    throw new HeldElsewhere(`handler ${name}`);
  };
  registerCustomHandlers(
    loaded.map(({ handler }): Handler<any, any> => ({
      name: handler.name,
      resources: handler.resources,
      lookups: handler.lookups ?? [],
      parseConfig: configChecks(handler),
      validate: handler.validate && held(handler.name),
      mutate: handler.mutate && held(handler.name),
    })),
  );
}
