/**
 * Handler modules (--handler-modules=DIR): finding the modules in the folder, importing them, and
 * checking what each declares (its handler API version, its handlers' names and shapes) before
 * any of its handlers is offered to a suite. A module that fails a check is refused whole, with
 * the reason, and the others load. Owns discovery and checks only: where a handler's sides run is
 * runner.ts's, and it must not reach the registry or the admission path.
 */
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { HANDLER_API_VERSION, type CustomHandler } from '../sdk/index.ts';
import { LOOKUP_KINDS, type ConfigContext, type LookupKind } from '../handlers/handler.ts';
import { firstLine } from '../policy/celjs/program.ts';

/** One handler as loaded, with the module file it came from (its worker loads that file again). */
export interface LoadedHandler {
  handler: CustomHandler<any>;
  module: string;
}

export interface LoadedModules {
  loaded: LoadedHandler[];
  /** Modules refused, each with why (the operator logs one line each). */
  refused: { module: string; reason: string }[];
}

/** `acme.dev/UniqueIngressHost`: a DNS domain with at least one dot, a slash, then a name. Built-in names have no slash, so the two never meet. */
const QUALIFIED = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)+\/[A-Za-z][A-Za-z0-9_-]{0,62}$/;

const MODULE_FILE = /\.(m?js|ts)$/;

/** The module entries in `dir`, sorted: `*.js`, `*.mjs`, `*.ts` files (not `.d.ts`) and folders with a package.json naming their entry. */
export function moduleEntries(dir: string): { module: string; entry?: string; reason?: string }[] {
  // A folder that is not there is a mistake to stop at, not a start with no modules (the suites naming them would all be refused).
  if (!fs.statSync(dir, { throwIfNoEntry: false })?.isDirectory()) throw new Error(`--handler-modules=${dir}: no such folder`);
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .filter((e) => !e.name.startsWith('.'))
    .sort((a, b) => a.name.localeCompare(b.name))
    .flatMap((e) => {
      const full = path.join(dir, e.name);
      if (e.isFile() || e.isSymbolicLink()) {
        if (!MODULE_FILE.test(e.name) || /\.d\.m?ts$/.test(e.name)) return [];
        if (e.isSymbolicLink() && fs.statSync(full).isDirectory()) return [packageEntry(full)];
        return [{ module: full, entry: full }];
      }
      if (e.isDirectory() && fs.existsSync(path.join(full, 'package.json'))) return [packageEntry(full)];
      return [];
    });
}

function packageEntry(dir: string): { module: string; entry?: string; reason?: string } {
  let manifest: { main?: unknown; exports?: unknown };
  try {
    manifest = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
  } catch (err) {
    return { module: dir, reason: `its package.json cannot be read: ${firstLine(err)}` };
  }
  const exported = manifest.exports;
  const dot = typeof exported === 'object' && exported !== null ? (exported as Record<string, unknown>)['.'] : exported;
  const target = typeof dot === 'string' ? dot : typeof dot === 'object' && dot !== null ? ((dot as Record<string, unknown>).import ?? (dot as Record<string, unknown>).default) : manifest.main;
  if (typeof target !== 'string') return { module: dir, reason: 'its package.json names no entry (main, or exports ".")' };
  const entry = path.resolve(dir, target);
  if (!fs.existsSync(entry)) return { module: dir, reason: `its entry ${target} does not exist (was it built? npm run build)` };
  return { module: dir, entry };
}

/** Whether a module built for `declared` loads here: the same major, a minor no newer than ours. */
export function compatible(declared: unknown, ours = HANDLER_API_VERSION): boolean {
  if (typeof declared !== 'string' || !/^\d+\.\d+$/.test(declared)) return false;
  const [major, minor] = declared.split('.').map(Number) as [number, number];
  const [ourMajor, ourMinor] = ours.split('.').map(Number) as [number, number];
  return major === ourMajor && minor <= ourMinor;
}

/** What is wrong with one exported handler (at `at`), or undefined. */
function handlerProblem(h: unknown, at: string): string | undefined {
  if (typeof h !== 'object' || h === null) return `${at} is not a handler object`;
  const handler = h as Partial<CustomHandler<any>>;
  if (typeof handler.name !== 'string' || !QUALIFIED.test(handler.name)) {
    return `${at}.name ${JSON.stringify(handler.name)} must be qualified by a domain the module's authors own, such as acme.dev/UniqueIngressHost`;
  }
  const named = `${at} (${handler.name})`;
  if (!Array.isArray(handler.resources) || handler.resources.length === 0 || !handler.resources.every((r) => typeof r?.group === 'string' && typeof r?.resource === 'string')) {
    return `${named}.resources must list the {group, resource} it serves`;
  }
  if (typeof handler.parseConfig !== 'function') return `${named}.parseConfig must be a function (noConfig(name) from portcullis/sdk for none)`;
  if (typeof handler.validate !== 'function' && typeof handler.mutate !== 'function') return `${named} has neither validate nor mutate`;
  const unknownKind = (handler.lookups ?? []).find((k) => !(LOOKUP_KINDS as readonly LookupKind[]).includes(k));
  if (handler.lookups !== undefined && !Array.isArray(handler.lookups)) return `${named}.lookups must be a list of kinds`;
  if (unknownKind) return `${named}.lookups names ${unknownKind}; the kinds served are ${LOOKUP_KINDS.join(', ')}`;
  if (handler.asks) return `${named}.asks: authorization checks are not offered to handler modules yet`;
  return undefined;
}

/** Imports every module in `dir` and checks it; `taken`: names already served (a module reusing one is refused). */
export async function loadHandlerModules(dir: string, taken: ReadonlySet<string> = new Set()): Promise<LoadedModules> {
  const result: LoadedModules = { loaded: [], refused: [] };
  const names = new Set(taken);
  for (const { module, entry, reason } of moduleEntries(dir)) {
    const refuse = (why: string) => result.refused.push({ module, reason: why });
    if (!entry) {
      refuse(reason!);
      continue;
    }
    let exports: Record<string, unknown>;
    try {
      exports = await import(pathToFileURL(entry).href);
    } catch (err) {
      refuse(`it failed to load: ${firstLine(err)}`);
      continue;
    }
    if (!compatible(exports.apiVersion)) {
      refuse(`it declares handler API version ${JSON.stringify(exports.apiVersion)}; this operator serves ${HANDLER_API_VERSION} (a module loads with the same major version and a minor no newer)`);
      continue;
    }
    const handlers = exports.handlers;
    if (!Array.isArray(handlers) || handlers.length === 0) {
      refuse('it exports no handlers (export const handlers = [...])');
      continue;
    }
    const problem = handlers.map((h, i) => handlerProblem(h, `handlers[${i}]`)).find(Boolean) ?? handlers.map((h: CustomHandler<any>) => h.name).find((name, i, all) => names.has(name) || all.indexOf(name) !== i);
    if (problem) {
      refuse(problem.includes(' ') ? problem : `handler ${problem} is served already (by another module or twice in this one)`);
      continue;
    }
    for (const handler of handlers as CustomHandler<any>[]) {
      names.add(handler.name);
      result.loaded.push({ handler, module: entry });
    }
  }
  return result;
}

/**
 * A module handler's config checks as the registry calls them: its errors, with the config as the
 * suite gives it (what the handler's worker parses again); one that throws is refused on apply, not the operator.
 */
export function configChecks(handler: CustomHandler<any>) {
  return (config: Record<string, unknown>, context?: ConfigContext): { config: Record<string, unknown>; errors: { field: string; message: string }[] } => {
    try {
      return { config, errors: handler.parseConfig(config, context).errors };
    } catch (err) {
      return { config, errors: [{ field: '', message: `${handler.name} could not read its config: ${firstLine(err)}` }] };
    }
  };
}
