/** Polling for what the cluster converges to, with the last failure in the error when time runs out; bounded fan-out of async work. */

/**
 * `timeoutMs` is a ceiling, not an expectation: a check that holds returns at once, so only a
 * failing run waits it out. Ceilings are generous (a minute unless said), since what they bound
 * takes longer on a busy machine; the last failure (the check's progress) is the error's message.
 */
export async function eventually<T>(check: () => Promise<T>, options: { timeoutMs?: number; intervalMs?: number; what?: string } = {}): Promise<T> {
  const ceiling = options.timeoutMs ?? DEFAULT_CEILING_MS;
  const deadline = Date.now() + ceiling;
  let last: unknown;
  while (Date.now() < deadline) {
    try {
      return await check();
    } catch (err) {
      last = err;
    }
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 200));
  }
  const reason = last instanceof Error ? last.message : String(last);
  throw new Error(`${options.what ?? 'condition'} did not hold within ${ceiling} ms: ${reason}`);
}

const DEFAULT_CEILING_MS = 60_000;

/** Runs `work` on every item, at most `concurrency` at once (the harness's and the benches' bounded fan-out). */
export async function pool<T>(items: T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}
