// Percentiles and formatting, shared by the load driver and the benchmarks.
export function percentile(sortedMs: readonly number[], p: number): number {
  if (sortedMs.length === 0) return NaN;
  const index = Math.min(sortedMs.length - 1, Math.max(0, Math.ceil((p / 100) * sortedMs.length) - 1));
  return sortedMs[index] ?? NaN;
}

export function summarize(latenciesMs: number[]): { p50: number; p99: number; count: number } {
  const sorted = [...latenciesMs].sort((a, b) => a - b);
  return { p50: percentile(sorted, 50), p99: percentile(sorted, 99), count: sorted.length };
}

export const fmt = (n: number, digits = 2): string => (Number.isFinite(n) ? n.toFixed(digits) : "n/a");
