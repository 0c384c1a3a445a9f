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
