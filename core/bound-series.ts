// Counters and histograms whose label sets are bound once, for the request
// path. prom-client's own `labels(...).observe()` re-validates and re-hashes
// the labels and looks the bucket up through a number→string property key on
// every call (~1 µs each here); a bound series here is an array index and a
// few additions. They register into a prom-client Registry as metric objects
// (`get()` answers prom-client's MetricObject shape), so the exposition
// format, default labels and content type stay prom-client's.
import type { Metric, Registry } from "prom-client";

/** What prom-client's Registry reads from a registered metric's get(). */
interface Exposition {
  name: string;
  help: string;
  type: "histogram" | "counter";
  values: { metricName?: string; labels: Record<string, string | number>; value: number }[];
  aggregator: "sum";
}

interface HistogramSeries {
  labels: Record<string, string>;
  /** Per bucket, not cumulative (made cumulative at scrape). */
  counts: Float64Array;
  sum: number;
  count: number;
}

export interface BoundHistogram {
  observe(value: number): void;
}

export interface BoundCounter {
  inc(by?: number): void;
}

/** A histogram family; `bind(labels)` returns the series to observe. */
export class FastHistogram {
  readonly name: string;
  readonly help: string;
  private readonly buckets: readonly number[];
  private readonly series = new Map<string, HistogramSeries>();

  constructor(registry: Registry, name: string, help: string, buckets: readonly number[]) {
    this.name = name;
    this.help = help;
    this.buckets = [...buckets].sort((a, b) => a - b);
    registry.registerMetric(this as unknown as Metric);
  }

  bind(labels: Record<string, string>): BoundHistogram {
    const key = JSON.stringify(labels);
    let s = this.series.get(key);
    if (!s) {
      s = { labels, counts: new Float64Array(this.buckets.length + 1), sum: 0, count: 0 };
      this.series.set(key, s);
    }
    const series = s;
    const bounds = this.buckets;
    return {
      observe(value) {
        let i = 0;
        while (i < bounds.length && value > bounds[i]!) i++;
        series.counts[i]! += 1;
        series.sum += value;
        series.count += 1;
      },
    };
  }

  /** prom-client's Registry reads this at scrape. */
  async get(): Promise<Exposition> {
    const values: Exposition["values"] = [];
    for (const s of this.series.values()) {
      let cumulative = 0;
      for (let i = 0; i < this.buckets.length; i++) {
        cumulative += s.counts[i]!;
        values.push({ metricName: `${this.name}_bucket`, labels: { ...s.labels, le: this.buckets[i]! }, value: cumulative });
      }
      values.push({ metricName: `${this.name}_bucket`, labels: { ...s.labels, le: "+Inf" }, value: s.count });
      values.push({ metricName: `${this.name}_sum`, labels: s.labels, value: s.sum });
      values.push({ metricName: `${this.name}_count`, labels: s.labels, value: s.count });
    }
    return { name: this.name, help: this.help, type: "histogram", values, aggregator: "sum" };
  }

  reset(): void {
    this.series.clear();
  }
}

/** A counter family; `bind(labels)` returns the series to increment. */
export class FastCounter {
  readonly name: string;
  readonly help: string;
  private readonly series = new Map<string, { labels: Record<string, string>; value: number }>();

  constructor(registry: Registry, name: string, help: string) {
    this.name = name;
    this.help = help;
    registry.registerMetric(this as unknown as Metric);
  }

  bind(labels: Record<string, string>): BoundCounter {
    const key = JSON.stringify(labels);
    let s = this.series.get(key);
    if (!s) {
      s = { labels, value: 0 };
      this.series.set(key, s);
    }
    const series = s;
    return {
      inc(by = 1) {
        series.value += by;
      },
    };
  }

  async get(): Promise<Exposition> {
    return { name: this.name, help: this.help, type: "counter", values: [...this.series.values()].map((s) => ({ labels: s.labels, value: s.value })), aggregator: "sum" };
  }

  reset(): void {
    this.series.clear();
  }
}
