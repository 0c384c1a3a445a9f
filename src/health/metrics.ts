/** Prometheus counters of the request flow and of API writes, in the text exposition format; no client library needed for this few. */

export class Metrics {
  private readonly writes: () => number;
  private readonly reviews = new Map<string, number>();
  private readonly seconds = new Map<string, number>();
  private readonly rejected = new Map<string, number>();

  /** `writes` counts this process's writes to the API server (non-zero only on the leader). */
  constructor(writes: () => number = () => 0) {
    this.writes = writes;
  }

  observeReview(suite: string, webhook: string, allowed: boolean, seconds: number): void {
    const key = `suite="${suite}",webhook="${webhook}",allowed="${allowed}"`;
    this.reviews.set(key, (this.reviews.get(key) ?? 0) + 1);
    const wkey = `suite="${suite}",webhook="${webhook}"`;
    this.seconds.set(wkey, (this.seconds.get(wkey) ?? 0) + seconds);
  }

  countRejected(code: string): void {
    this.rejected.set(code, (this.rejected.get(code) ?? 0) + 1);
  }

  render(): string {
    const lines = [
      '# HELP portcullis_admission_reviews_total AdmissionReviews answered, by suite, webhook and decision.',
      '# TYPE portcullis_admission_reviews_total counter',
      ...[...this.reviews].map(([labels, n]) => `portcullis_admission_reviews_total{${labels}} ${n}`),
      '# HELP portcullis_admission_review_seconds_total Time spent deciding AdmissionReviews.',
      '# TYPE portcullis_admission_review_seconds_total counter',
      ...[...this.seconds].map(([labels, n]) => `portcullis_admission_review_seconds_total{${labels}} ${n}`),
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
