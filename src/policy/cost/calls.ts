/**
 * What calls and operators cost by the size of their operands, after cel-go's `costCall` and
 * Kubernetes' `CostEstimator.CallCost`: value sizes, traversal costs, and one entry per sized
 * function. Pure arithmetic on values: charges nothing itself (instrument.ts does), imports
 * nothing of the libraries.
 *
 * Two tables. CALL_COSTS and `operatorCost` are the API server's, figure for figure, with its
 * blind spots: cel-go charges a call by size only when the checker resolved one overload, so on
 * `dyn` values (most of `object`) `sort()`, `+` on strings, `<` and `in` on a list cost 1; and
 * some figures leave out work that grows with the input (a list of short strings traverses for
 * nothing, `==` counts a map's keys but compares it whole, `charAt` and `size` of a string scan it).
 * Suites keep those: they must answer as the API server does. STRICT_CALL_COSTS and
 * `strictOperatorCost` are what a team's AdmissionPolicy is charged instead (instrument.ts's
 * strict instrumentation): every call and operator whose work grows with its input, by the real
 * size of its arguments at run time whatever their static type, computed from the arguments alone
 * so that it is charged before the work is done. Where the API server's figure already bounds the
 * work, the strict figure is the same.
 */
import type { CheckedNode as Node } from '../celjs/types.ts';
import { elementType, SORTABLE } from '../celjs/static-types.ts';
import { Optional } from '../celjs/values.ts';

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

// ---------------------------------------------------------------------------------------------
// A team's AdmissionPolicies: charged by real sizes, before the call (see the file comment).

/** What a library's value (a URL, a quantity, a semver) weighs when a call works over it; values without it weigh their actualSize. */
export const COST_SIZE: unique symbol = Symbol('cost size');

/** The size of `v` as its work goes: actualSize, or a library value's COST_SIZE. */
function strictSize(v: unknown): number {
  if (typeof v === 'object' && v !== null) {
    const weight = (v as { [COST_SIZE]?: unknown })[COST_SIZE];
    if (typeof weight === 'number') return weight;
  }
  return actualSize(v);
}

const deepCosts = new WeakMap<object, number>();

/**
 * A map's keys beyond which V8 holds a JSON object as a dictionary, about ten times as dear per key.
 * Why: docs/adr/0014-cost-of-calls-as-measured.md
 */
const DICTIONARY_KEYS = 1024;
const DICTIONARY_ENTRY = 10;

/**
 * The work of visiting every part of `v` (comparing it, searching it, rendering it): a string a
 * tenth of its length and at least 1, any other scalar 1, a list the sum of its elements, a map
 * of its keys and values (more per entry for a large map, DICTIONARY_KEYS; and pairwise for a map
 * that is not a JSON object, which CEL equality compares entry by entry). Unlike Kubernetes'
 * traversalCost, a short string is not free. Remembered per container, as traversalCost is.
 */
export function deepCost(v: unknown): number {
  if (typeof v === 'string') return v.length <= 10 ? 1 : Math.ceil(v.length * STRING_TRAVERSAL);
  if (typeof v !== 'object' || v === null) return 1;
  let cost = deepCosts.get(v);
  if (cost === undefined) deepCosts.set(v, (cost = measureDeep(v)));
  return cost;
}

function measureDeep(v: object): number {
  if (v instanceof Uint8Array) return v.length <= 10 ? 1 : Math.ceil(v.length * STRING_TRAVERSAL);
  let cost = 0;
  if (Array.isArray(v) || v instanceof Set) {
    for (const e of v) cost += deepCost(e);
    return cost;
  }
  if (v instanceof Map) {
    for (const [k, e] of v) cost += deepCost(k) + deepCost(e);
    return cost + v.size * v.size;
  }
  const prototype = Object.getPrototypeOf(v);
  if (prototype === Object.prototype || prototype === null) {
    // (a JSON object may have a key "constructor": its prototype says what it is)
    let keys = 0;
    for (const k in v) {
      cost += deepCost(k) + deepCost((v as Record<string, unknown>)[k]);
      keys++;
    }
    return keys > DICTIONARY_KEYS ? cost + keys * DICTIONARY_ENTRY : cost;
  }
  if (v instanceof Optional) return v.hasValue() ? deepCost(v.value()) : 1;
  return Math.max(1, traverse(strictSize(v)));
}

/** log2 of a list's size, rounded up: how often a sort visits each element. */
const sortDepth = (n: number) => Math.max(1, Math.ceil(Math.log2(n + 1)));

/** sort: cel-go's O(n^2) figure, or a visit of every element per level of the sort where its elements are long strings. */
export function strictSortCost(list: unknown): number {
  const size = actualSize(list);
  return Math.max(selfCompare(list), deepCost(list) * sortDepth(size) + 1 + LIST_CREATE);
}

/** sets.*: n x m comparisons, each at most the deep cost of the smaller element (the product of sizes at least). */
function strictSetsCost(a: unknown[], factor: number): number {
  const x = a[a.length - 2];
  const y = a[a.length - 1];
  const pairs = Math.max(actualSize(x) * actualSize(y), Math.min(actualSize(x) * deepCost(y), actualSize(y) * deepCost(x)));
  return 1 + Math.floor(pairs * factor);
}

/** The length of `list.join(separator)` (elements that are not strings count 1: join refuses them). */
function joinedLength(list: unknown, separator: unknown): number {
  if (!Array.isArray(list) && !(list instanceof Set)) return 0;
  let length = 0;
  let n = 0;
  for (const e of list) {
    length += typeof e === 'string' ? e.length : 1;
    n++;
  }
  return length + (n > 1 && typeof separator === 'string' ? (n - 1) * separator.length : 0);
}

/** The length of `s.replace(old, by[, n])` (Go's strings.Replace; an empty `old` matches before every rune and at the end). */
function replacedLength(s: unknown, old: unknown, by: unknown, n: unknown): number {
  if (typeof s !== 'string' || typeof old !== 'string' || typeof by !== 'string') return 0;
  const limit = typeof n === 'bigint' && n >= 0n ? Number(n) : Infinity;
  let count = 0;
  if (old === '') count = Math.min(limit, s.length + 1);
  else if (by.length > old.length) {
    for (let i = s.indexOf(old); i >= 0 && count < limit; i = s.indexOf(old, i + old.length)) count++;
  }
  return s.length + count * Math.max(0, by.length - old.length);
}

/** How many elements `flatten(depth)` yields, without building them. */
function flattenedSize(list: unknown, depth: number): number {
  if (!Array.isArray(list) && !(list instanceof Set)) return 0;
  let n = 0;
  for (const v of list) n += depth > 0 && (Array.isArray(v) || v instanceof Set) ? flattenedSize(v, depth - 1) : 1;
  return n;
}

/** Kubernetes' regex figure, with the string's traversal five times as dear (re2js). */
function strictRegexCost(s: unknown, re: unknown): number {
  return Math.ceil((1 + actualSize(s)) * 0.5) * Math.ceil(actualSize(re) * REGEX_LENGTH);
}

const FORMAT_FACTOR = 8;

const keyCounts = new WeakMap<object, number>();
/** How many keys a JSON object has, counted once (CEL values never change). */
function keyCount(v: object): number {
  let n = keyCounts.get(v);
  if (n === undefined) keyCounts.set(v, (n = actualSize(v)));
  return n;
}

/** size() of a string counts its runes; of a JSON object, its keys (docs/adr/0014-cost-of-calls-as-measured.md). */
function sizeCost(v: unknown): number {
  if (typeof v === 'string') return traverse(v.length);
  if (typeof v !== 'object' || v === null || Array.isArray(v) || v instanceof Uint8Array || v instanceof Set || v instanceof Map) return 1;
  const keys = keyCount(v);
  return keys > DICTIONARY_KEYS ? 3 * keys : traverse(keys);
}

/** A quantity's decimal exponent (`1e9`), whose power of ten its exact value computes: a tenth of it. */
function exponentCost(s: unknown): number {
  const exponent = typeof s === 'string' ? /[eE][+-]?(\d{1,12})$/.exec(s)?.[1] : undefined;
  return exponent === undefined ? 0 : traverse(Number(exponent));
}

/** A string argument's traversal (0 for anything else). */
const stringTraversal = (v: unknown) => (typeof v === 'string' || v instanceof Uint8Array ? traverse(v.length) : 0);

/** A call on one or two library values (quantities, semvers, URLs): by what it works over. */
const libraryValues = (a: unknown[]) => traverse(strictSize(a[0]) + (a.length > 1 ? strictSize(a[a.length - 1]) : 0));

type StrictCost = (args: unknown[]) => number;

/** What the API server's figure is, where it is computed from the arguments alone and bounds the work. */
const same = (name: string): StrictCost => {
  const cost = CALL_COSTS[name]!;
  return (a) => cost(a, undefined, false, undefined as never);
};

/**
 * Total cost of one call in a team's policy (the 1 of the call itself is already in the static
 * count), from its arguments alone, receiver first: charged before the call runs.
 */
export const STRICT_CALL_COSTS: Record<string, StrictCost> = {
  startsWith: same('startsWith'),
  endsWith: same('endsWith'),
  contains: (a) => (a.length === 3 ? strictSetsCost(a, 1) : traverse(actualSize(a[0])) * traverse(actualSize(a[1]))),
  intersects: (a) => strictSetsCost(a, 1),
  equivalent: (a) => strictSetsCost(a, 2),
  // RE2 in JavaScript (re2js) is slower per character than Go's (docs/adr/0014-cost-of-calls-as-measured.md)
  matches: (a) => strictRegexCost(a[0], a[1]),
  find: (a) => strictRegexCost(a[0], a[1]),
  findAll: (a) => strictRegexCost(a[0], a[1]),
  // rune by rune (docs/adr/0014-cost-of-calls-as-measured.md)
  quote: (a) => Math.ceil(actualSize(a[a.length - 1]) * 0.5),
  // the template, and every argument as Go's %s renders it (docs/adr/0014-cost-of-calls-as-measured.md)
  format: (a) => traverse(actualSize(a[0])) + (a.length > 1 ? FORMAT_FACTOR * deepCost(a[1]) : 0),
  isSorted: (a) => deepCost(a[0]),
  sum: (a) => deepCost(a[0]),
  max: (a) => deepCost(a[0]),
  min: (a) => deepCost(a[0]),
  includes: (a) => deepCost(a[0]),
  // a string's search compares the substring at each position; a list's compares each element
  indexOf: (a) => (typeof a[0] === 'string' ? traverse(a[0].length) * Math.max(1, stringTraversal(a[1])) : deepCost(a[0])),
  lastIndexOf: (a) => (typeof a[0] === 'string' ? traverse(a[0].length) * Math.max(1, stringTraversal(a[1])) : deepCost(a[0])),
  url: same('url'),
  lowerAscii: same('lowerAscii'),
  upperAscii: same('upperAscii'),
  substring: same('substring'),
  trim: same('trim'),
  // the traversal, and the result: an empty `old` or a longer replacement multiplies it
  replace: (a) => Math.ceil(actualSize(a[0]) * 2 * STRING_TRAVERSAL) + traverse(replacedLength(a[0], a[1], a[2], a[3])),
  split: same('split'),
  // the API server charges the result; it is known from the arguments
  join: (a) => Math.ceil(joinedLength(a[0], a[1]) * 2 * STRING_TRAVERSAL),
  cidr: same('cidr'),
  ip: same('ip'),
  isIP: same('isIP'),
  isCIDR: same('isCIDR'),
  // a decimal exponent is worked out in full (the exact value, as apimachinery's inf.Dec holds it)
  quantity: (a) => traverse(actualSize(a[0])) + exponentCost(a[0]),
  isQuantity: (a) => traverse(actualSize(a[0])) + exponentCost(a[0]),
  semver: same('semver'),
  isSemver: same('isSemver'),
  isCanonical: same('isCanonical'),
  containsIP: same('containsIP'),
  containsCIDR: same('containsCIDR'),
  check: same('check'),
  // the lists extension: what they copy (slice copies the whole list first), sort and distinct what they compare
  slice: (a) => allocatingList(1, actualSize(a[0])),
  range: (a) => allocatingList(1, typeof a[a.length - 1] === 'bigint' ? Math.max(0, Math.min(Number(a[a.length - 1]), 1_000_000)) : 1),
  reverse: (a) => allocatingList(1, actualSize(a[0])),
  flatten: (a) => {
    const depth = typeof a[1] === 'bigint' ? Number(a[1]) : 1;
    return Math.max(allocatingList(depth, actualSize(a[0])), allocatingList(1, flattenedSize(a[0], depth)));
  },
  distinct: (a) => Math.max(selfCompare(a[0]), actualSize(a[0]) * deepCost(a[0]) + 1 + LIST_CREATE),
  sort: (a) => strictSortCost(a[0]),
  first: (a) => traverse(actualSize(a[0])),
  last: (a) => traverse(actualSize(a[0])),
  unwrapOpt: (a) => allocatingList(1, actualSize(a[0])),
  unwrap: (a) => allocatingList(1, actualSize(a[a.length - 1])),
  // what the API server charges 1 for and scans whole: a string's runes (charAt splits it whole), a map's keys, a conversion
  charAt: (a) => Math.ceil(actualSize(a[0]) * 2 * STRING_TRAVERSAL),
  size: (a) => sizeCost(a[a.length - 1]),
  // (optional.ofNonZeroValue counts a map's keys as size() does)
  ofNonZeroValue: (a) => sizeCost(a[a.length - 1]),
  string: (a) => Math.max(1, stringTraversal(a[0])),
  bytes: (a) => Math.max(1, stringTraversal(a[0])),
  double: (a) => Math.max(1, stringTraversal(a[0])),
  duration: (a) => Math.max(1, stringTraversal(a[0])),
  timestamp: (a) => Math.max(1, stringTraversal(a[0])),
  isURL: (a) => traverse(actualSize(a[0])),
  validate: (a) => Math.max(1, stringTraversal(a[a.length - 1])),
  // a URL's accessors read it again; a quantity's or semver's arithmetic and comparisons work over its digits and identifiers
  getScheme: libraryValues,
  getHost: libraryValues,
  getHostname: libraryValues,
  getPort: libraryValues,
  getEscapedPath: libraryValues,
  // a map of lists built from every parameter (docs/adr/0014-cost-of-calls-as-measured.md)
  getQuery: (a) => 2 * strictSize(a[0]),
  compareTo: libraryValues,
  isGreaterThan: libraryValues,
  isLessThan: libraryValues,
  add: libraryValues,
  sub: libraryValues,
  sign: libraryValues,
  asInteger: libraryValues,
  isInteger: libraryValues,
  asApproximateFloat: libraryValues,
};

/**
 * Total cost of one operator application in a team's policy, whatever its operands' static types:
 * `+` by the sizes it copies, `==` by what a deep comparison visits (the smaller side bounds it),
 * `<` on strings by the shorter, `in` on a list by every element it compares.
 */
export function strictOperatorCost(op: string, l: unknown, r: unknown): number {
  switch (op) {
    case '+':
      return isSequence(l) || Array.isArray(l) ? traverse(actualSize(l) + actualSize(r)) : 1;
    case '==':
    case '!=':
      if (isSequence(l) && isSequence(r)) return traverse(Math.min(actualSize(l), actualSize(r)));
      if (typeof l !== 'object' || l === null || typeof r !== 'object' || r === null) return 1;
      return Math.min(deepCost(l), deepCost(r));
    case 'in':
      return Array.isArray(r) || r instanceof Set ? deepCost(r) : 1;
    default:
      // < <= > >=
      return isSequence(l) && isSequence(r) ? traverse(Math.min(actualSize(l), actualSize(r))) : 1;
  }
}
