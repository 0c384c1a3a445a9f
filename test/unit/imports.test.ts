/**
 * The shape of src/ as its imports draw it: no import cycle anywhere (type-only imports count: a
 * cycle of types is a cycle of concepts); src/'s rooms (its folders and top-level files) on the
 * floors docs/layout.md states, each importing only rooms on floors below its own; and src/policy's
 * sub-folders importing only downward, in the order docs/layout.md's table gives; and that table true (the folders it names exist, every folder of src/ is named). Imports are read with the TypeScript compiler's
 * own pre-processor (every `import`, `export ... from` and `import()`), not by running anything.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import ts from 'typescript';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
const SRC = path.join(ROOT, 'src');

/** src/policy's floors, top first: a file may import its own floor's files and those of floors below it. */
const POLICY_FLOORS = [['typecheck'], ['engine'], ['fast'], ['library'], ['cost'], ['values', 'celjs']];

/**
 * src/'s floors, top first (as docs/layout.md lists them): a room (a folder of src/, or a file at
 * its top) imports its own files and rooms on floors below its own, never its floor's others or above.
 */
const SRC_FLOORS = [
  ['main.ts'],
  ['cli', 'manager'],
  ['admission', 'controller'],
  ['native', 'audit'],
  ['desired', 'handler-modules'],
  ['registry', 'sdk', 'local', 'config.ts'],
  ['policy', 'handlers', 'apiserver', 'health'],
  ['api', 'certs', 'workers', 'version.ts'],
  ['go', 'kubernetes', 'app-files.ts', 'error-message.ts', 'log.ts'],
];
/** At most this many floors (issue 54): a new floor is a sign a room is in the wrong place. */
const MOST_FLOORS = 10;

/** The room of a file of src/ (its top folder, or itself at the top), or undefined outside src/. */
const roomOf = (file: string): string | undefined => {
  const parts = file.split(path.sep);
  return parts[0] === 'src' && parts.length >= 2 ? parts[1] : undefined;
};
const floorOf = (room: string) => SRC_FLOORS.findIndex((rooms) => rooms.includes(room));

/** Imports from one room to another that do not go to a lower floor. */
function upward(graph: Map<string, string[]>, floors: string[][]): string[] {
  const floor = (room: string) => floors.findIndex((rooms) => rooms.includes(room));
  return [...graph].flatMap(([file, targets]) =>
    targets.flatMap((target) => {
      const [from, to] = [roomOf(file)!, roomOf(target)];
      return to !== undefined && from !== to && floor(to) <= floor(from) ? [`${file} (${from}) imports ${target} (${to})`] : [];
    }),
  );
}

function sourceFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return sourceFiles(full);
    return entry.name.endsWith('.ts') ? [full] : [];
  });
}

/** file (relative to the repository) -> the files of src/ it imports. */
function importGraph(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  for (const file of sourceFiles(SRC)) {
    const info = ts.preProcessFile(readFileSync(file, 'utf8'), true, true);
    const targets = info.importedFiles
      .map((f) => f.fileName)
      .filter((name) => name.startsWith('.'))
      .map((name) => path.relative(ROOT, path.resolve(path.dirname(file), name)));
    graph.set(path.relative(ROOT, file), [...new Set(targets)].sort());
  }
  return graph;
}

/** Every cycle found by a depth-first walk, each as the path that closes it (a -> b -> a). */
function cycles(graph: Map<string, string[]>): string[] {
  const found: string[] = [];
  const state = new Map<string, 'open' | 'done'>();
  const stack: string[] = [];
  const visit = (file: string) => {
    state.set(file, 'open');
    stack.push(file);
    for (const next of graph.get(file) ?? []) {
      if (state.get(next) === 'open') found.push([...stack.slice(stack.indexOf(next)), next].join(' -> '));
      else if (!state.has(next)) visit(next);
    }
    stack.pop();
    state.set(file, 'done');
  };
  for (const file of [...graph.keys()].sort()) if (!state.has(file)) visit(file);
  return found;
}

/** Every folder under dir, relative to the repository. */
function folders(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    return entry.isDirectory() ? [path.relative(ROOT, full), ...folders(full)] : [];
  });
}

/**
 * What docs/layout.md's table says untruly: a folder its first column names that does not exist,
 * and a folder of src/ it does not name, as a row or, for a sub-folder, as `name/` in the row of
 * the nearest folder above it that has one (src/handlers' row names `pod-security/`).
 */
function layoutProblems(page: string, srcFolders: string[], exists: (folder: string) => boolean): string[] {
  const rows = new Map<string, string>();
  for (const line of page.split('\n')) {
    const cells = /^\| ([^|]+) \|(.*)$/.exec(line);
    if (!cells || !cells[1]!.startsWith('`')) continue;
    for (const name of cells[1]!.matchAll(/`([^`]+)`/g)) rows.set(name[1]!.replace(/\/$/, ''), cells[2]!);
  }
  const missing = [...rows.keys()].filter((folder) => !exists(folder)).map((folder) => `${folder} is named but does not exist`);
  const unnamed = srcFolders.filter((folder) => {
    if (rows.has(folder)) return false;
    const parts = folder.split('/');
    for (let up = parts.length - 1; up >= 2; up--) {
      const row = rows.get(parts.slice(0, up).join('/'));
      if (row !== undefined) return !row.includes(`\`${parts.slice(up).join('/')}/\``);
    }
    return true;
  });
  return [...missing, ...unnamed.map((folder) => `${folder} is not named`)];
}

function policyFloor(file: string): number | undefined {
  const parts = file.split(path.sep);
  if (parts[0] !== 'src' || parts[1] !== 'policy' || parts.length < 4) return undefined;
  const floor = POLICY_FLOORS.findIndex((names) => names.includes(parts[2]!));
  return floor < 0 ? -1 : floor;
}

describe('imports of src/', () => {
  const graph = importGraph();

  it('reads the whole of src/ (the graph is not empty, and imports resolve to files that exist)', () => {
    expect(graph.size).to.be.above(50);
    const missing = [...graph].flatMap(([file, targets]) => targets.filter((t) => !graph.has(t)).map((t) => `${file} imports ${t}, which is not a file of src/`));
    expect(missing).to.deep.equal([]);
  });

  it('has no import cycle', () => {
    expect(cycles(graph), 'import cycles (each closing path)').to.deep.equal([]);
  });

  it('finds a cycle when there is one (the check can fail)', () => {
    const looped = new Map([...graph, ['src/a.ts', ['src/b.ts']], ['src/b.ts', ['src/a.ts']]]);
    expect(cycles(looped)).to.deep.equal(['src/a.ts -> src/b.ts -> src/a.ts']);
  });

  it(`has src/ on at most ${MOST_FLOORS} floors, as docs/layout.md lists them, each room importing only rooms on floors below`, () => {
    expect(SRC_FLOORS.length).to.be.at.most(MOST_FLOORS);
    const rooms = new Set([...graph.keys()].map((f) => roomOf(f)!));
    expect([...rooms].filter((room) => floorOf(room) < 0).sort(), 'rooms on no floor (add them to SRC_FLOORS and docs/layout.md)').to.deep.equal([]);
    expect(upward(graph, SRC_FLOORS), 'imports that do not go down a floor').to.deep.equal([]);
    // The page states the same floors, top first, one numbered line each.
    const page = readFileSync(path.join(ROOT, 'docs', 'layout.md'), 'utf8');
    const stated = [...page.matchAll(/^(\d+)\. floor: (.+)$/gm)].map((m) => [...m[2]!.matchAll(/`([^`]+)`/g)].map((r) => r[1]!.replace(/^src\//, '').replace(/\/$/, '')));
    expect(stated, "docs/layout.md's floors").to.deep.equal(SRC_FLOORS);
  });

  it("has docs/layout.md's table true: every folder it names exists, and every folder of src/ is named", () => {
    const page = readFileSync(path.join(ROOT, 'docs', 'layout.md'), 'utf8');
    const srcFolders = folders(SRC).map((f) => f.split(path.sep).join('/'));
    expect(layoutProblems(page, srcFolders, (folder) => existsSync(path.join(ROOT, folder)))).to.deep.equal([]);
  });

  it('finds a folder the table names that is gone, and a folder of src/ it does not name (the check can fail)', () => {
    const page = ['| folder | owns |', '| --- | --- |', '| `src/api` | types |', '| `src/kube` | gone |', '| `src/handlers` | handlers; (`pod-security/`) |'].join('\n');
    const srcFolders = ['src/api', 'src/handlers', 'src/handlers/pod-security', 'src/handlers/extra', 'src/new'];
    expect(layoutProblems(page, srcFolders, (folder) => folder !== 'src/kube')).to.deep.equal(['src/kube is named but does not exist', 'src/handlers/extra is not named', 'src/new is not named']);
  });

  it('finds an import that goes up a floor (the check can fail)', () => {
    const raised = new Map([...graph, ['src/api/x.ts', ['src/controller/reconciler.ts']]]);
    expect(upward(raised, SRC_FLOORS)).to.deep.equal(['src/api/x.ts (api) imports src/controller/reconciler.ts (controller)']);
  });

  it('has src/policy in floors that import only downward (typecheck, engine, fast, library, cost, then values/celjs)', () => {
    const files = [...graph.keys()].filter((f) => policyFloor(f) !== undefined);
    const unplaced = files.filter((f) => policyFloor(f) === -1);
    expect(unplaced, 'files of src/policy outside a known floor (add the folder to POLICY_FLOORS and docs/layout.md)').to.deep.equal([]);
    const upward = files.flatMap((file) =>
      graph
        .get(file)!
        .filter((t) => {
          const to = policyFloor(t);
          return to !== undefined && to < policyFloor(file)!;
        })
        .map((t) => `${file} imports ${t}`),
    );
    expect(upward, 'imports that go up a floor').to.deep.equal([]);
    const outside = [...graph].flatMap(([file, targets]) =>
      policyFloor(file) === undefined ? [] : targets.filter((t) => t.startsWith('src/') && !t.startsWith('src/policy/') && !/^src\/(api|kubernetes|go)\//.test(t)).map((t) => `${file} imports ${t}`),
    );
    expect(outside, 'src/policy imports only src/api, src/kubernetes and src/go beside itself').to.deep.equal([]);
  });
});
