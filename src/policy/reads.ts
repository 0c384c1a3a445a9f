/**
 * What a webhook's expressions can read of the activation, found once per compile in their
 * checked ASTs: the variables they name, and for `object`, `oldObject` and `request` the fields
 * they reach. A field chain (`object.spec.containers`, `object.metadata["labels"]`, `has(o.a.b)`)
 * reaches its last field and everything under it; a value used any other way (a comprehension
 * over it, an argument, a comparison) is read whole from where its chain ends. Nothing outside
 * these paths is observable, so nothing outside them needs converting per request (values.ts).
 */
import type { Program } from './cel.ts';
import type { RawNode } from './library/validate.ts';

/** `true`: the whole value; a map: only these fields, each read as its entry says. */
export type Reads = true | ReadonlyMap<string, Reads>;

/** The activation variables whose fields are tracked; every other one is read whole. */
const TRACKED = new Set(['object', 'oldObject', 'request']);

export class ActivationReads {
  /** Every activation variable the expressions name. */
  readonly names = new Set<string>();
  private readonly fields = new Map<string, Reads>();

  constructor(programs: readonly (Program | undefined)[]) {
    const parents = new Map<RawNode, (RawNode | null)[]>();
    const ids: RawNode[] = [];
    for (const program of programs) if (program) collect(program.ast, null, parents, ids, new Set());
    for (const id of ids) {
      const name = id.args as string;
      this.names.add(name);
      if (!TRACKED.has(name)) continue;
      for (const path of chainsFrom(id, parents)) this.fields.set(name, merge(this.fields.get(name), path, 0));
    }
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

/** Every field path along which `node` is read, each ending where the value is read whole. */
function chainsFrom(node: RawNode, parents: Map<RawNode, (RawNode | null)[]>, path: string[] = []): string[][] {
  const paths: string[][] = [];
  for (const parent of parents.get(node) ?? [null]) {
    const field = parent ? selectedField(parent, node) : undefined;
    if (field === undefined) paths.push(path);
    else paths.push(...chainsFrom(parent!, parents, [...path, field]));
  }
  return paths;
}

function merge(reads: Reads | undefined, path: string[], at: number): Reads {
  if (reads === true || at === path.length) return true;
  const fields = new Map(reads ?? []);
  fields.set(path[at]!, merge(fields.get(path[at]!), path, at + 1));
  return fields;
}
