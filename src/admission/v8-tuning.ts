/**
 * V8 tuned for the admission server: its heap, for the allocation pattern of short-lived reviews,
 * and its optimizing compiler's inlining budget, for the depth of a review's path. Owns
 * process-wide V8 flags only; applied by the process entry point (main.ts, and the bench's server),
 * and before the admission thread is made (threads/thread.ts).
 */
import v8 from 'node:v8';

/**
 * Turns off V8's allocation-site pretenuring. Every review allocates a few small objects that
 * point into the request's freshly parsed JSON (the activation, the request's attributes). Once
 * V8 decides to allocate such an object in the old generation (it does, at some point of warm-up,
 * on this server), each one keeps its request alive through every young-generation GC until the
 * next full one: scavenges then copy whole requests. Measured: 300,000 reviews in process spent
 * 0.8 to 1.6 s scavenging, 0.1 s with this off; the bench's server under load spent about 10 us of
 * scavenging per review, 1.2 us with this off, and ran a mark-compact every 2 s instead of none.
 * V8 decides at warm-up, so a run can go either way. Short-lived objects are what this server makes.
 */
export function tuneHeapForAdmission(): void {
  v8.setFlagsFromString('--no-allocation-site-pretenuring');
}

/**
 * The admission isolate's nursery (MiB per semi-space), said rather than left to V8, which sizes it
 * by the heap limit (smaller in a small container). Each scavenge costs about 0.3 ms whatever
 * survives it (scanning the roots, sweeping the requests' array buffers), and a review allocates
 * about 16 KB, so the nursery's size decides the GC time per review. Measured on the bench's server
 * under load (GC pauses per review): 2 MiB 2.0 us, 4 MiB 1.5, 8 MiB 0.9-1.3, 16 MiB 0.6, 32 MiB 0.6.
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
 * - `--max-semi-space-size=2` (MiB), the main thread's nursery, small: the main thread answers no
 *   review but those the admission thread hands it (params, lookups, its own webhooks), and each
 *   MiB here is resident: idle RSS measured 164 MB with 16 (32 MiB of nursery, nearly unused),
 *   the admission thread's is sized apart (sizeNurseryForAdmission). With `--admission-thread=false`
 *   the main thread serves with this nursery.
 * - `--heap-growing-percent=25`: the old generation may grow a quarter past what the last full GC
 *   left live before the next one (V8 otherwise picks up to 4x by allocation rate). A burst of new
 *   suites leaves old generations of watched objects behind (each version of a suite, Secret and
 *   configuration the caches held): with 1,000 suites just applied the heap held 227 MB, 98 MB of
 *   it live, and V8 gave none back. Measured (bench/scale.ts, 1,000 suites): RSS with the suites
 *   426-443 MB before, 247-267 MB after (0.29 -> 0.12-0.14 MB per suite), after a restart 304-310
 *   -> 233 MB; CPU per review unchanged within noise (61.2 vs 62.4 us, bench A/B of 7 rounds).
 * - `--max-inlined-bytecode-size-cumulative=4000` (V8's default is 920): how much bytecode TurboFan
 *   may inline into one optimized function. A review's path is deep (node:http's callbacks, the
 *   chain, the webhook, its rules, each compiled expression), and at the default budget inlining
 *   stops partway down it. Measured, two builds loaded side by side on one core (bench/run.ts'
 *   load): 2000 +3.4%, 4000 +7.3%, 8000 +4.8%, 16000 +5.2% requests per core; 300 -6%, no inlining
 *   -19%. The bench's bare floor server gains 3% from it.
 */
export const OPERATOR_NODE_FLAGS = ['--max-semi-space-size=2', '--heap-growing-percent=25', '--max-inlined-bytecode-size-cumulative=4000'];

/** The benches' server alone, whose main thread serves as the admission thread does: its nursery, the operator's other flags. */
export const SERVING_NODE_FLAGS = [`--max-semi-space-size=${ADMISSION_SEMI_SPACE_MB}`, ...OPERATOR_NODE_FLAGS.filter((flag) => !flag.startsWith('--max-semi-space-size='))];
