/**
 * What calls and operators cost by the size of their operands, after cel-go's `costCall` and
 * Kubernetes' `CostEstimator.CallCost`: value sizes, traversal costs, and one entry per sized
 * function. Pure arithmetic on values: charges nothing itself (instrument.ts does), imports
 * nothing of the libraries.
 */
import type { CheckedNode as Node } from '../celjs/types.ts';
import { elementType, SORTABLE } from '../celjs/static-types.ts';

/** A list literal's creation (cel-go's `common.ListCreateBaseCost`). */
export const LIST_CREATE = 10;
const STRING_TRAVERSAL = 0.1;
const REGEX_LENGTH = 0.25;

/** cel-go's `actualSize`: length of strings, bytes, lists and maps; 1 for anything else. */
export function actualSize(v: unknown): number {
  if (typeof v === 'string') return v.length;
  if (typeof v !== 'object' || v === null) return 1;
  if (Array.isArray(v) || v instanceof Uint8Array) return v.length;
  if (v instanceof Map || v instanceof Set) return v.size;
  if (v.constructor === Object || v.constructor === undefined) {
    let n = 0;
    for (const _ in v) n++;
    return n;
  }
  return 1;
}

/**
 * Kubernetes' `traversalCost`, remembered per container: CEL values never change, and a
 * comprehension asks for the same list's cost once per iteration (`list.indexOf(c)` inside a
 * `map` over that list), which would otherwise walk it n times.
 */
const traversalCosts = new WeakMap<object, number>();
function traversalCost(v: unknown): number {
  if (typeof v !== 'object' || v === null) return deepTraversalCost(v);
  let cost = traversalCosts.get(v);
  if (cost === undefined) traversalCosts.set(v, (cost = deepTraversalCost(v)));
  return cost;
}

/** Kubernetes' `traversalCost`: a string costs a tenth of its length, containers the sum of their elements. */
function deepTraversalCost(v: unknown): number {
  if (typeof v === 'string') return Math.floor(v.length * STRING_TRAVERSAL);
  if (v instanceof Uint8Array) return Math.floor(v.length * STRING_TRAVERSAL);
  if (Array.isArray(v)) {
    let cost = 0;
    for (const e of v) cost += deepTraversalCost(e);
    return cost;
  }
  if (v instanceof Set) {
    let cost = 0;
    for (const e of v) cost += deepTraversalCost(e);
    return cost;
  }
  if (v instanceof Map) {
    let cost = 0;
    for (const [k, e] of v) cost += deepTraversalCost(k) + deepTraversalCost(e);
    return cost;
  }
  if (typeof v === 'object' && v !== null && (v.constructor === Object || v.constructor === undefined)) {
    let cost = 0;
    for (const k in v) cost += deepTraversalCost(k) + deepTraversalCost((v as Record<string, unknown>)[k]);
    return cost;
  }
  return 1;
}

export const traverse = (n: number) => Math.ceil(n * STRING_TRAVERSAL);
const regexCost = (s: unknown, re: unknown) => Math.ceil((1 + actualSize(s)) * STRING_TRAVERSAL) * Math.ceil(actualSize(re) * REGEX_LENGTH);

type CallCost = (args: unknown[], result: unknown, receiver: boolean, node: Node) => number;

/** Total cost of one call (the 1 of the call itself is already in the static count). `args` include the receiver first. */
export const CALL_COSTS: Record<string, CallCost> = {
  startsWith: (a) => traverse(actualSize(a[1])),
  endsWith: (a) => traverse(actualSize(a[1])),
  // string.contains(sub), or sets.contains(list, list) (a call on the `sets` namespace in cel-js)
  contains: (a) => (a.length === 3 ? setsCost(a, 1) : traverse(actualSize(a[0])) * traverse(actualSize(a[1]))),
  intersects: (a) => setsCost(a, 1),
  equivalent: (a) => setsCost(a, 2),
  matches: (a) => regexCost(a[0], a[1]),
  find: (a) => regexCost(a[0], a[1]),
  findAll: (a) => regexCost(a[0], a[1]),
  // strings.quote(s) is a call on the `strings` namespace in cel-js: its string is the last argument
  quote: (a) => traverse(actualSize(a[a.length - 1])),
  format: (a) => traverse(actualSize(a[0])),
  isSorted: (a) => traversalCost(a[0]),
  sum: (a) => traversalCost(a[0]),
  max: (a) => traversalCost(a[0]),
  min: (a) => traversalCost(a[0]),
  indexOf: (a) => traversalCost(a[0]),
  lastIndexOf: (a) => traversalCost(a[0]),
  includes: (a) => traversalCost(a[0]),
  url: (a) => traverse(actualSize(a[0])),
  lowerAscii: (a) => traverse(actualSize(a[0])),
  upperAscii: (a) => traverse(actualSize(a[0])),
  substring: (a) => traverse(actualSize(a[0])),
  trim: (a) => traverse(actualSize(a[0])),
  replace: (a) => Math.ceil(actualSize(a[0]) * 2 * STRING_TRAVERSAL),
  split: (a) => Math.ceil(actualSize(a[0]) * 2 * STRING_TRAVERSAL),
  join: (_, result) => Math.ceil(actualSize(result) * 2 * STRING_TRAVERSAL),
  cidr: (a) => traverse(actualSize(a[0])),
  ip: (a) => traverse(actualSize(a[0])),
  isIP: (a) => traverse(actualSize(a[0])),
  isCIDR: (a) => traverse(actualSize(a[0])),
  quantity: (a) => traverse(actualSize(a[0])),
  isQuantity: (a) => traverse(actualSize(a[0])),
  semver: (a) => traverse(actualSize(a[0])),
  isSemver: (a) => traverse(actualSize(a[0])),
  isCanonical: (a) => Math.ceil(actualSize(a[a.length - 1]) * 2 * STRING_TRAVERSAL),
  containsIP: (a) => traverse(2 * actualSize(a[0])) + (typeof a[1] === 'string' ? traverse(a[1].length) : 0),
  containsCIDR: (a) => traverse(2 * actualSize(a[0])) + traverse(actualSize(a[0])) + 1 + (typeof a[1] === 'string' ? traverse(a[1].length) : 0),
  // an authorization check (a SubjectAccessReview) costs enough to allow two per expression
  check: () => 350_000,
  // the lists extension (version 3): by the size of what they allocate (cel-go ext/lists.go)
  slice: (_, result) => allocatingList(1, actualSize(result)),
  range: (_, result) => allocatingList(1, actualSize(result)),
  reverse: (_, result) => allocatingList(1, actualSize(result)),
  flatten: (a) => allocatingList(typeof a[1] === 'bigint' ? Number(a[1]) : 1, actualSize(a[0])),
  distinct: (a) => selfCompare(a[0]),
  // cel-go's tracker charges sort only when the checker resolved one overload (a known element type)
  sort: (a, _, __, node) => (sortIsTracked(((node.args as unknown[])[1] as Node | undefined)?.checkedType?.name) ? selfCompare(a[0]) : 1),
};

/** cel-go's sets: the product of the two lists' sizes (after the namespace receiver). */
function setsCost(a: unknown[], factor: number): number {
  return 1 + Math.floor(actualSize(a[a.length - 2]) * actualSize(a[a.length - 1]) * factor);
}

function allocatingList(factor: number, size: number): number {
  return Math.floor(size * (factor < 0 ? 1 : factor)) + 1 + LIST_CREATE;
}

function selfCompare(list: unknown): number {
  const size = actualSize(list);
  const first = Array.isArray(list) ? list[0] : undefined;
  return allocatingList(isSequence(first) ? 2 + STRING_TRAVERSAL : 2, size * size);
}

function isSequence(v: unknown): boolean {
  return typeof v === 'string' || v instanceof Uint8Array;
}

/** Total cost of one operator application, as cel-go's `costCall` has it. */
export function operatorCost(op: string, l: unknown, r: unknown, typedSequence: boolean, typedList: boolean): number {
  switch (op) {
    case '+':
      if (typedSequence && isSequence(l)) return traverse(actualSize(l) + actualSize(r));
      // cel-go concatenates lists lazily and charges 1; cel-js copies them, so a list is charged by
      // size, typed or not (this only tells once lists reach millions of elements, and keeps a chain
      // of doublings from exhausting memory)
      if (Array.isArray(l)) return traverse(actualSize(l) + actualSize(r));
      return 1;
    case '==':
    case '!=':
      return traverse(Math.min(actualSize(l), actualSize(r)));
    case 'in':
      return typedList && (Array.isArray(r) || r instanceof Set) ? actualSize(r) : 1;
    default:
      // < <= > >=
      if (typedSequence && isSequence(l)) return traverse(Math.min(actualSize(l), actualSize(r)));
      return 1;
  }
}

/** Whether cel-go's tracker charges sort on a receiver of this static type (one overload resolved). */
export function sortIsTracked(receiverType: string | undefined): boolean {
  const element = receiverType === undefined ? undefined : elementType(receiverType);
  return element !== undefined && (SORTABLE.includes(element) || /^[A-Z]$/.test(element));
}
