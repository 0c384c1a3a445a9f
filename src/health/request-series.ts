/**
 * The admission request path's counters and histograms as a few numbers each, exposed through a
 * prom-client Registry; owns nothing but its series (what they mean is metrics.ts's).
 * Why not prom-client's own: docs/adr/0008-request-metrics-own-series.md
 */
import type client from 'prom-client';

export class BucketSeries {
  readonly labels: Record<string, string>;
  private readonly bounds: readonly number[];
  /** Per bucket, not cumulative; the last one is +Inf. */
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(bounds: readonly number[], labels: Record<string, string>) {
    this.bounds = bounds;
    this.labels = labels;
    this.counts = new Float64Array(bounds.length + 1);
  }

  observe(value: number): void {
    if (!Number.isFinite(value)) return;
    const bounds = this.bounds;
    let i = 0;
    while (i < bounds.length && value > bounds[i]!) i++;
    this.counts[i]!++;
    this.sum += value;
    this.count++;
  }
}

export interface BucketHistogramOptions {
  name: string;
  help: string;
  buckets: readonly number[];
  registers: client.Registry[];
}

/** prom-client's Metric shape (name, help, type, get, reset), so a Registry exposes it as its own. */
export class BucketHistogram {
  readonly name: string;
  readonly help: string;
  readonly type = 'histogram' as const;
  readonly aggregator = 'sum' as const;
  private readonly bounds: readonly number[];
  private readonly series = new Map<string, BucketSeries>();

  constructor(options: BucketHistogramOptions) {
    this.name = options.name;
    this.help = options.help;
    this.bounds = [...options.buckets].sort((a, b) => a - b);
    for (const registry of options.registers) registry.registerMetric(this as unknown as client.Metric);
  }

  /** The series of `labels`, made on first use: resolve it once and keep it. */
  labels(labels: Record<string, string>): BucketSeries {
    const key = seriesKey(labels);
    let series = this.series.get(key);
    if (!series) this.series.set(key, (series = new BucketSeries(this.bounds, { ...labels })));
    return series;
  }

  remove(labels: Record<string, string>): void {
    this.series.delete(seriesKey(labels));
  }

  reset(): void {
    this.series.clear();
  }

  /** What prom-client's Registry formats: one value per bucket (cumulative, `le`), then `_sum` and `_count`. */
  async get(): Promise<{ name: string; help: string; type: 'histogram'; aggregator: 'sum'; values: { metricName: string; labels: Record<string, string>; value: number }[] }> {
    const values: { metricName: string; labels: Record<string, string>; value: number }[] = [];
    for (const series of this.series.values()) {
      let cumulative = 0;
      for (let i = 0; i <= this.bounds.length; i++) {
        cumulative += series.counts[i]!;
        const le = i < this.bounds.length ? String(this.bounds[i]) : '+Inf';
        values.push({ metricName: `${this.name}_bucket`, labels: { ...series.labels, le }, value: cumulative });
      }
      values.push({ metricName: `${this.name}_sum`, labels: series.labels, value: series.sum });
      values.push({ metricName: `${this.name}_count`, labels: series.labels, value: series.count });
    }
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values };
  }
}

/** A counter whose series are resolved once (`labels`) and then only incremented. */
export class SeriesCounter {
  readonly name: string;
  readonly help: string;
  readonly type = 'counter' as const;
  readonly aggregator = 'sum' as const;
  private readonly series = new Map<string, { labels: Record<string, string>; value: number; inc(): void }>();

  constructor(options: { name: string; help: string; registers: client.Registry[] }) {
    this.name = options.name;
    this.help = options.help;
    for (const registry of options.registers) registry.registerMetric(this as unknown as client.Metric);
  }

  labels(labels: Record<string, string>): { inc(): void } {
    const key = seriesKey(labels);
    let series = this.series.get(key);
    if (!series) {
      const made = { labels: { ...labels }, value: 0, inc: () => void made.value++ };
      this.series.set(key, (series = made));
    }
    return series;
  }

  remove(labels: Record<string, string>): void {
    this.series.delete(seriesKey(labels));
  }

  reset(): void {
    this.series.clear();
  }

  async get(): Promise<{ name: string; help: string; type: 'counter'; aggregator: 'sum'; values: { labels: Record<string, string>; value: number }[] }> {
    return { name: this.name, help: this.help, type: this.type, aggregator: this.aggregator, values: [...this.series.values()].map(({ labels, value }) => ({ labels, value })) };
  }
}

function seriesKey(labels: Record<string, string>): string {
  return JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));
}
