/**
 * V8 tuned for the admission server: its heap, for the allocation pattern of short-lived reviews,
 * and its optimizing compiler's inlining budget, for the depth of a review's path. Owns
 * process-wide V8 flags only; applied by the process entry point (main.ts, and the bench's server),
 * and before the admission thread is made (threads/thread.ts).
 */
import v8 from 'node:v8';

/**
 * Turns off V8's allocation-site pretenuring, which would let a review's few old objects keep its whole request alive through scavenges.
 * Why: docs/adr/0001-admission-heap-no-pretenuring.md
 */
export function tuneHeapForAdmission(): void {
  v8.setFlagsFromString('--no-allocation-site-pretenuring');
}

/**
 * The admission isolate's nursery (MiB per semi-space), said rather than left to V8, which sizes it by the heap limit.
 * Why: docs/adr/0002-admission-nursery-16-mib.md
 */
export const ADMISSION_SEMI_SPACE_MB = 16;

/**
 * Gives isolates made from now on (the admission thread's) ADMISSION_SEMI_SPACE_MB of nursery. V8
 * sizes an isolate's heap from its flags as it makes it, and the flag, where given, wins over a
 * worker's resourceLimits; the main thread, made before, keeps its own (OPERATOR_NODE_FLAGS).
 */
export function sizeNurseryForAdmission(): void {
  v8.setFlagsFromString(`--max-semi-space-size=${ADMISSION_SEMI_SPACE_MB}`);
}

/**
 * Node flags the operator is started with (the image's entry point, `npm start`, the benches),
 * since V8 reads them as it starts, before any code of ours runs (the heap is sized then).
 * - `--max-semi-space-size=2` (MiB), the main thread's nursery, small; the admission thread's is
 *   sized apart (sizeNurseryForAdmission). Why: docs/adr/0003-main-thread-nursery-2-mib.md
 * - `--heap-growing-percent=25`: the old generation grows at most a quarter past what the last full
 *   GC left live. Why: docs/adr/0004-heap-growing-percent-25.md
 * - `--max-inlined-bytecode-size-cumulative=4000` (V8's default is 920): inlining reaches further
 *   down a review's deep path. Why: docs/adr/0005-inlining-budget-4000.md
 */
export const OPERATOR_NODE_FLAGS = ['--max-semi-space-size=2', '--heap-growing-percent=25', '--max-inlined-bytecode-size-cumulative=4000'];

/** The benches' server alone, whose main thread serves as the admission thread does: its nursery, the operator's other flags. */
export const SERVING_NODE_FLAGS = [`--max-semi-space-size=${ADMISSION_SEMI_SPACE_MB}`, ...OPERATOR_NODE_FLAGS.filter((flag) => !flag.startsWith('--max-semi-space-size='))];
