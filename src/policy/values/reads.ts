/**
 * What a webhook's expressions can read of the activation, found once per compile in their checked
 * ASTs: the variables named, and the fields of `object`, `oldObject` and `request` reached. A chain
 * reaches its last field and all under it; a comprehension's range is read through its iteration
 * variable; `size()` reads nothing below; any other use reads the value whole. Nothing else is
 * observable, so nothing else needs converting per request (convert.ts).
 */
import type { Program } from '../celjs/program.ts';
import type { RawNode } from '../celjs/walk.ts';

/** `true`: the whole value; otherwise only these fields, and the elements (a list's, or a map's values) as `elements` says. */
export type Reads = true | FieldReads;
export interface FieldReads {
  /** (A list rather than a map: walked once per request, in a loop that allocates nothing.) */
  readonly fields: readonly (readonly [name: string, reads: Reads])[];
  readonly elements?: Reads;
}

/** A step into the elements of a list (or the values of a map) a comprehension walks. */
const ELEMENTS: unique symbol = Symbol('elements');
type Step = string | typeof ELEMENTS;

/** A path read from a variable: whole from its end, or (`whole` false) only as far as it goes. */
interface ReadPath {
  steps: Step[];
  whole: boolean;
}

/** The activation variables each request binds anew (engine/activation.ts). */
export type BoundVariable = 'object' | 'oldObject' | 'request' | 'params' | 'namespaceObject';

/** The activation variables whose fields are tracked; every other one is read whole. */
const TRACKED = new Set(['object', 'oldObject', 'request']);

export class ActivationReads {
  /** Every activation variable the expressions name. */
  readonly names = new Set<string>();
  /** Whether they name each variable bound per request: asked on every request, so looked up once here. */
  readonly binds: Readonly<Record<BoundVariable, boolean>>;
  private readonly fields = new Map<string, Reads>();

  constructor(programs: readonly (Program | undefined)[]) {
    const parents = new Map<RawNode, (RawNode | null)[]>();
    const ids: RawNode[] = [];
    for (const program of programs) if (program) collect(program.ast, null, parents, ids, new Set());
    const building = new Map<string, Building>();
    for (const id of ids) {
      const name = id.args as string;
      this.names.add(name);
      if (!TRACKED.has(name)) continue;
      for (const path of chainsFrom(id, parents)) building.set(name, merge(building.get(name), path, 0));
    }
    for (const [name, reads] of building) this.fields.set(name, settle(reads));
    const names = this.names;
    this.binds = { object: names.has('object'), oldObject: names.has('oldObject'), request: names.has('request'), params: names.has('params'), namespaceObject: names.has('namespaceObject') };
  }

  uses(name: string): boolean {
    return this.names.has(name);
  }

  /** The parts of `name` the expressions can read (nothing when they do not name it). */
  of(name: string): Reads | undefined {
    return this.fields.get(name);
  }
}

/**
 * Records each node's parents (null: something that is not a field selection, such as a macro's
 * own pieces), and the `id` nodes. A node reached twice gets both parents.
 */
function collect(value: unknown, parent: RawNode | null, parents: Map<RawNode, (RawNode | null)[]>, ids: RawNode[], seen: Set<unknown>): void {
  if (typeof value !== 'object' || value === null) return;
  if (Array.isArray(value)) {
    for (const item of value) collect(item, parent, parents, ids, seen);
    return;
  }
  if (typeof (value as RawNode).op !== 'string') {
    // macros keep their pieces in plain objects: whatever they hold is not selected from
    if ((value as object).constructor === Object && !seen.has(value)) {
      seen.add(value);
      for (const piece of Object.values(value)) collect(piece, null, parents, ids, seen);
    }
    return;
  }
  const node = value as RawNode;
  const known = parents.get(node);
  if (known) {
    known.push(parent);
    return;
  }
  parents.set(node, [parent]);
  if (node.op === 'id' && typeof node.args === 'string') ids.push(node);
  if (node.op !== 'value') collect(node.args, node, parents, ids, seen);
}

/** The field name `parent` selects from `child`, if it is a field selection of it with a name known before evaluation. */
function selectedField(parent: RawNode, child: RawNode): string | undefined {
  const args = parent.args as unknown[];
  if (!Array.isArray(args) || args[0] !== child) return undefined;
  if ((parent.op === '.' || parent.op === '.?') && typeof args[1] === 'string') return args[1];
  if (parent.op === '[]' || parent.op === '[?]') {
    const index = args[1] as RawNode | undefined;
    if (index?.op === 'value' && typeof index.args === 'string') return index.args;
  }
  return undefined;
}

/** Every path along which `node` is read. */
function chainsFrom(node: RawNode, parents: Map<RawNode, (RawNode | null)[]>, steps: Step[] = []): ReadPath[] {
  const paths: ReadPath[] = [];
  for (const parent of parents.get(node) ?? [null]) {
    const field = parent ? selectedField(parent, node) : undefined;
    if (field !== undefined) {
      paths.push(...chainsFrom(parent!, parents, [...steps, field]));
      continue;
    }
    if (parent && sizeOf(parent, node)) {
      paths.push({ steps, whole: false });
      continue;
    }
    const walk = parent ? comprehensionOver(parent, node) : undefined;
    if (!walk) {
      paths.push({ steps, whole: true });
      continue;
    }
    const within: Step[] = [...steps, ELEMENTS];
    const uses = walk.bodies.flatMap((body) => idsNamed(body, walk.variable));
    if (uses.length === 0) paths.push({ steps: within, whole: false });
    for (const use of uses) paths.push(...chainsFrom(use, parents, within));
  }
  return paths;
}

/** True when `parent` is `size()` of `child` (receiver or argument): it reads nothing below. */
function sizeOf(parent: RawNode, child: RawNode): boolean {
  const args = parent.args as unknown[];
  if (!Array.isArray(args) || args[0] !== 'size') return false;
  if (parent.op === 'rcall') return args[1] === child && Array.isArray(args[2]) && args[2].length === 0;
  return parent.op === 'call' && Array.isArray(args[1]) && args[1].length === 1 && args[1][0] === child;
}

/**
 * The comprehension macros whose result is built from their bodies only (never the elements
 * themselves, as `filter` and `sortBy` return them), by number of arguments: how many of them are
 * variables, and which one is bound to the element (a map's value in two-variable forms;
 * one-variable forms over a map bind keys, strings, which need nothing).
 */
const COMPREHENSIONS: Record<string, Partial<Record<number, { variables: number; element: number }>>> = {
  all: { 2: { variables: 1, element: 0 }, 3: { variables: 2, element: 1 } },
  exists: { 2: { variables: 1, element: 0 }, 3: { variables: 2, element: 1 } },
  exists_one: { 2: { variables: 1, element: 0 }, 3: { variables: 2, element: 1 } },
  existsOne: { 2: { variables: 1, element: 0 }, 3: { variables: 2, element: 1 } },
  map: { 2: { variables: 1, element: 0 }, 3: { variables: 1, element: 0 } },
  transformList: { 3: { variables: 2, element: 1 }, 4: { variables: 2, element: 1 } },
  transformMap: { 3: { variables: 2, element: 1 }, 4: { variables: 2, element: 1 } },
  transformMapEntry: { 3: { variables: 2, element: 1 }, 4: { variables: 2, element: 1 } },
};

/** When `parent` is a comprehension over `child`: the element's variable and the expressions that may read it. */
function comprehensionOver(parent: RawNode, child: RawNode): { variable: string; bodies: RawNode[] } | undefined {
  const args = parent.args as unknown[];
  if (parent.op !== 'rcall' || !Array.isArray(args) || args[1] !== child || !Array.isArray(args[2])) return undefined;
  const macroArgs = args[2] as RawNode[];
  const shape = COMPREHENSIONS[args[0] as string]?.[macroArgs.length];
  if (!shape) return undefined;
  const variables = macroArgs.slice(0, shape.variables);
  const variable = macroArgs[shape.element]!;
  if (variables.some((v) => v?.op !== 'id' || typeof v.args !== 'string')) return undefined;
  const bodies = macroArgs.slice(shape.variables);
  // A body that binds the same name again (a nested comprehension, cel.bind) would hide which
  // uses are ours: read the elements whole then.
  if (bodies.some((body) => rebinds(body, variable.args as string))) return undefined;
  return { variable: variable.args as string, bodies };
}

/** The `id` nodes named `name` under `node`. */
function idsNamed(node: unknown, name: string, found: RawNode[] = []): RawNode[] {
  forEachChild(node, (n) => {
    if (n.op === 'id' && n.args === name) found.push(n);
  });
  return found;
}

/** True when some call under `node` takes an identifier named `name` as one of its first two arguments (how macros bind). */
function rebinds(node: unknown, name: string): boolean {
  let found = false;
  forEachChild(node, (n) => {
    const args = n.args as unknown[];
    if ((n.op !== 'rcall' && n.op !== 'call') || !Array.isArray(args)) return;
    const callArgs = (n.op === 'rcall' ? args[2] : args[1]) as RawNode[] | undefined;
    if (Array.isArray(callArgs) && callArgs.slice(0, 2).some((a) => a?.op === 'id' && a.args === name)) found = true;
  });
  return found;
}

/** Visits `node` and every node under it (literals' values are not nodes). */
function forEachChild(node: unknown, visit: (node: RawNode) => void): void {
  if (typeof node !== 'object' || node === null) return;
  if (Array.isArray(node)) {
    for (const item of node) forEachChild(item, visit);
    return;
  }
  const raw = node as RawNode;
  if (typeof raw.op !== 'string') return;
  visit(raw);
  if (raw.op !== 'value') forEachChild(raw.args, visit);
}

/** Reads while they are being gathered. */
type Building = true | Gathering;
interface Gathering {
  fields: Map<string, Building>;
  elements?: Building;
}

function merge(reads: Building | undefined, path: ReadPath, at: number): Building {
  if (reads === true) return true;
  const into: Gathering = reads ?? { fields: new Map() };
  if (at === path.steps.length) return path.whole ? true : into;
  const step = path.steps[at]!;
  if (step === ELEMENTS) into.elements = merge(into.elements, path, at + 1);
  else into.fields.set(step, merge(into.fields.get(step), path, at + 1));
  return into;
}

function settle(reads: Building): Reads {
  if (reads === true) return true;
  const fields = [...reads.fields].map(([name, below]) => [name, settle(below)] as const);
  return reads.elements === undefined ? { fields } : { fields, elements: settle(reads.elements) };
}
