/**
 * JSON patches applied copy-on-write: only the objects and arrays on an operation's path are
 * copied, everything else is shared with the original. Applying stays in place on our copies,
 * and the diff back to the original (fast-json-patch's compare skips identical references) walks
 * only what changed, instead of two full copies and a full walk of a large object per request.
 */
import jsonpatch from 'fast-json-patch';
import type { JsonPatchOperation } from '../../api/types.ts';

type Json = Record<string, unknown> | unknown[];

/** Applies `ops` to `document` (the original, or a copy this module made), returning the new root; never changes the original. */
export class CopyOnWritePatcher {
  private readonly copies = new WeakSet<object>();

  apply<T extends object>(document: T, ops: JsonPatchOperation[]): T {
    let root = this.own(document) as T;
    for (const op of ops) {
      if (typeof op.path === 'string') root = this.ownPath(root, op.path);
      if (op.op === 'move' && typeof op.from === 'string') root = this.ownPath(root, op.from);
      root = jsonpatch.applyOperation(root, op as jsonpatch.Operation, true, true).newDocument as T;
    }
    return root;
  }

  private own<T extends object>(node: T): T {
    if (this.copies.has(node)) return node;
    const copy = (Array.isArray(node) ? [...node] : { ...node }) as T;
    this.copies.add(copy);
    return copy;
  }

  /** Makes every container above the last key of `pointer` one of our copies. */
  private ownPath<T extends object>(root: T, pointer: string): T {
    const keys = pointer.split('/').slice(1);
    let node = this.own(root) as Json;
    const ownedRoot = node as T;
    for (let i = 0; i < keys.length - 1; i++) {
      const raw = keys[i]!;
      const key = raw.includes('~') ? raw.replace(/~1/g, '/').replace(/~0/g, '~') : raw;
      const child = (node as Record<string, unknown>)[key];
      // A missing step is left for applyOperation to refuse with its own message.
      if (child === null || typeof child !== 'object' || !Object.hasOwn(node, key)) break;
      const owned = this.own(child as Json);
      (node as Record<string, unknown>)[key] = owned;
      node = owned;
    }
    return ownedRoot;
  }
}
