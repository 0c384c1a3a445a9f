/** Polling for what the cluster converges to, with the last failure in the error when time runs out. */

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
