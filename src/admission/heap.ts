/**
 * The V8 heap tuned for the admission server's allocation pattern. Owns process-wide V8 flags
 * only; called once by the process entry point (main.ts, and the bench's server), before load.
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
 * Node flags the operator is started with (the image's entry point, `npm start`, the benches),
 * since V8 sizes its heap when it is made, before any code of ours runs.
 * - `--max-semi-space-size=2` (MiB; Node's default grows to 16): measured, the idle operator's RSS
 *   falls from 184 to 159 MB and with 300 suites just applied from 372 to 257 MB, while the admission
 *   server's CPU time per review stays the same (54.6 us default, 53.0 us with 2 MiB, bench/run.ts):
 *   what a review allocates dies young, so a smaller nursery is scavenged more often at no more cost.
 * - `--heap-growing-percent=25`: the old generation may grow a quarter past what the last full GC
 *   left live before the next one (V8 otherwise picks up to 4x by allocation rate). A burst of new
 *   suites leaves old generations of watched objects behind (each version of a suite, Secret and
 *   configuration the caches held): with 1,000 suites just applied the heap held 227 MB, 98 MB of
 *   it live, and V8 gave none back. Measured (bench/scale.ts, 1,000 suites): RSS with the suites
 *   426-443 MB before, 247-267 MB after (0.29 -> 0.12-0.14 MB per suite), after a restart 304-310
 *   -> 233 MB; CPU per review unchanged within noise (61.2 vs 62.4 us, bench A/B of 7 rounds).
 */
export const OPERATOR_NODE_FLAGS = ['--max-semi-space-size=2', '--heap-growing-percent=25'];
