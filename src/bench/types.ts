/** One measured figure of a benchmark suite (a row of its table in BENCHMARKS.md). */
export interface BenchRow {
  name: string;
  value: number;
  unit: string;
  note?: string;
}
