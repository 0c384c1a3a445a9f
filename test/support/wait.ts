/** Polling for what the cluster converges to, with the last failure in the error when time runs out; bounded fan-out of async work. */

export async function eventually<T>(check: () => Promise<T>, options: { timeoutMs?: number; intervalMs?: number; what?: string } = {}): Promise<T> {
  const deadline = Date.now() + (options.timeoutMs ?? 30_000);
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
  throw new Error(`${options.what ?? 'condition'} did not hold within ${options.timeoutMs ?? 30_000} ms: ${reason}`);
}

/** Runs `work` on every item, at most `concurrency` at once (the harness's and the benches' bounded fan-out). */
export async function pool<T>(items: T[], concurrency: number, work: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  await Promise.all(
    Array.from({ length: Math.min(concurrency, items.length) }, async () => {
      while (next < items.length) await work(items[next++]!);
    }),
  );
}
