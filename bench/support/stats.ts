/** Medians and percentiles, because these machines are noisy and a mean hides that. */
export function percentile(values: readonly number[], p: number): number {
  if (values.length === 0) return Number.NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const index = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[index] as number;
}

export const median = (values: readonly number[]) => percentile(values, 50);

/** Times `fn` `count` times after `warmup` untimed runs; returns milliseconds per run. */
export async function sample(
  count: number,
  fn: (index: number) => Promise<unknown>,
  warmup = 5,
): Promise<number[]> {
  for (let index = 0; index < warmup; index += 1) await fn(-1 - index);
  const times: number[] = [];
  for (let index = 0; index < count; index += 1) {
    const started = performance.now();
    await fn(index);
    times.push(performance.now() - started);
  }
  return times;
}
