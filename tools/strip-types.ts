/**
 * `node tools/strip-types.ts SRC OUT`: the image's JavaScript. Every `.ts` file of SRC written to
 * OUT as `.js` with its types removed by Node's own stripper (the one `node src/main.ts` uses, so
 * the code that runs is the code that was tested, positions kept), and relative `.ts` specifiers
 * (imports, `import()`, the review worker's URL) turned to `.js`. Why: running `.ts` loads Node's
 * type stripper (amaro, a WebAssembly module) into the process, about 18 MB of RSS for the life of
 * the operator (43 MB against 61 MB for an empty script). Run by the Dockerfile's build stage;
 * nothing else depends on it.
 */
import fs from 'node:fs';
import path from 'node:path';
import { stripTypeScriptTypes } from 'node:module';

const [source, out] = process.argv.slice(2);
if (!source || !out) {
  process.stderr.write('usage: node tools/strip-types.ts SRC OUT\n');
  process.exit(2);
}

/** A quoted relative path ending in `.ts`: what an import names, and the worker's URL. */
const RELATIVE_TS = /(['"])(\.{1,2}\/[^'"\n]*?)\.ts\1/g;

let files = 0;
const walk = (dir: string) => {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const from = path.join(dir, entry.name);
    if (entry.isDirectory()) {
      walk(from);
      continue;
    }
    const to = path.join(out, path.relative(source, from));
    fs.mkdirSync(path.dirname(to), { recursive: true });
    if (!entry.name.endsWith('.ts')) {
      fs.copyFileSync(from, to);
      continue;
    }
    const code = stripTypeScriptTypes(fs.readFileSync(from, 'utf8'), { mode: 'strip' }).replace(RELATIVE_TS, '$1$2.js$1');
    fs.writeFileSync(to.replace(/\.ts$/, '.js'), code);
    files++;
  }
};
walk(source);
process.stdout.write(`${files} files stripped of their types into ${out}\n`);
