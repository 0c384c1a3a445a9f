/**
 * Where the app's own files are, in either layout it runs from: the repository (`node src/main.ts`,
 * a module per file) or the image (`dist/`, one bundle per entry, made by tools/build.ts). Owns
 * paths only: it must not read what they name.
 */
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The directory of the app's package.json: the nearest at or above this module. Found rather than
 * written as `../..`, because in the bundle every module's code sits in dist/ at one depth.
 */
export const APP_ROOT: string = findRoot(path.dirname(fileURLToPath(import.meta.url)));

function findRoot(from: string): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) throw new Error(`no package.json at or above ${from}`);
  }
}

/** A path under the app's root: `appFile('crds', 'x.yaml')`. */
export function appFile(...segments: string[]): string {
  return path.join(APP_ROOT, ...segments);
}

/**
 * A worker thread's entry: the module `name` beside the module that starts it (`callerUrl`, its
 * import.meta.url), with the caller's own extension: `.ts` from src/; `.js` in the image, where
 * tools/build.ts writes every entry flat in dist/, beside main.js that holds the caller's code.
 */
export function workerEntry(name: string, callerUrl: string): URL {
  return new URL(`./${name}${path.extname(fileURLToPath(callerUrl))}`, callerUrl);
}
