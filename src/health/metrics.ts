/** Prometheus counters of the request flow and of API writes, in the text exposition format; no client library needed for this few. */

/** A labelled counter; its label text is built once, when the series first appears. */
interface Series {
  labels: string;
  n: number;
}

/** The series of one webhook: built on its first review, then only incremented (the request path). */
interface WebhookSeries {
  allowed: Series | undefined;
  denied: Series | undefined;
  seconds: Series;
}

export class Metrics {
  private readonly writes: () => number;
  /** In order of first appearance, as rendered. */
  private readonly reviews: Series[] = [];
  private readonly seconds: Series[] = [];
  private readonly bySuite = new Map<string, Map<string, WebhookSeries>>();
  private readonly rejected = new Map<string, number>();

  /** `writes` counts this process's writes to the API server (non-zero only on the leader). */
  constructor(writes: () => number = () => 0) {
    this.writes = writes;
  }

  observeReview(suite: string, webhook: string, allowed: boolean, seconds: number): void {
    let webhooks = this.bySuite.get(suite);
    if (!webhooks) this.bySuite.set(suite, (webhooks = new Map()));
    let series = webhooks.get(webhook);
    if (!series) {
      series = { allowed: undefined, denied: undefined, seconds: { labels: `suite="${suite}",webhook="${webhook}"`, n: 0 } };
      this.seconds.push(series.seconds);
      webhooks.set(webhook, series);
    }
    let count = allowed ? series.allowed : series.denied;
    if (!count) {
      count = { labels: `suite="${suite}",webhook="${webhook}",allowed="${allowed}"`, n: 0 };
      this.reviews.push(count);
      if (allowed) series.allowed = count;
      else series.denied = count;
    }
    count.n++;
    series.seconds.n += seconds;
  }

  countRejected(code: string): void {
    this.rejected.set(code, (this.rejected.get(code) ?? 0) + 1);
  }

  render(): string {
    const lines = [
      '# HELP portcullis_admission_reviews_total AdmissionReviews answered, by suite, webhook and decision.',
      '# TYPE portcullis_admission_reviews_total counter',
      ...this.reviews.map(({ labels, n }) => `portcullis_admission_reviews_total{${labels}} ${n}`),
      '# HELP portcullis_admission_review_seconds_total Time spent deciding AdmissionReviews.',
      '# TYPE portcullis_admission_review_seconds_total counter',
      ...this.seconds.map(({ labels, n }) => `portcullis_admission_review_seconds_total{${labels}} ${n}`),
      '# HELP portcullis_admission_rejected_requests_total Requests refused before a decision (malformed, unknown webhook).',
      '# TYPE portcullis_admission_rejected_requests_total counter',
      ...[...this.rejected].map(([code, n]) => `portcullis_admission_rejected_requests_total{code="${code}"} ${n}`),
      '# HELP portcullis_api_writes_total Writes this process made to the Kubernetes API (only the leader writes).',
      '# TYPE portcullis_api_writes_total counter',
      `portcullis_api_writes_total ${this.writes()}`,
    ];
    return `${lines.join('\n')}\n`;
  }
}
