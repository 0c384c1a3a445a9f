/** The built-in handlers by name. A new handler is one file and one line here. */
import { alwaysPullImages } from './always-pull-images.ts';
import type { Handler } from './handler.ts';

const HANDLERS: Handler<any>[] = [alwaysPullImages];

const byName = new Map(HANDLERS.map((handler) => [handler.name, handler]));

export function findHandler(name: string): Handler<any> | undefined {
  return byName.get(name);
}

export function handlerNames(): string[] {
  return [...byName.keys()];
}
