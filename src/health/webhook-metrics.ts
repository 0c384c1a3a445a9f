/**
 * The request path's recorder for one webhook: its label children resolved once (when the webhook
 * is compiled), so an answer costs a few increments. The metric objects are metrics.ts's.
 */
import { OUTCOMES, type Outcome } from '../api/admission-review.ts';
import type { BucketHistogram, SeriesCounter } from './request-series.ts';

/** From a tenth of a millisecond (a typical answer) to 10 s (past the API server's default webhook timeout). */
export const LATENCY_BUCKETS = [0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

export interface AdmissionInstruments {
  requests: SeriesCounter;
  duration: BucketHistogram;
  celDuration: BucketHistogram;
  celCost: BucketHistogram;
  failures: SeriesCounter;
}

const OPERATIONS = ['CREATE', 'UPDATE', 'DELETE', 'CONNECT'] as const;

interface Child {
  inc(): void;
}
interface Observer {
  observe(value: number): void;
}

export class WebhookMetrics {
  private readonly instruments: AdmissionInstruments;
  private readonly labels: { suite: string; webhook: string };
  /** By operation and decision, resolved on first use (20 at most). */
  private readonly counts: (Child | undefined)[] = [];
  private readonly failures: Partial<Record<'Fail' | 'Ignore', Child>> = {};
  private readonly duration: Observer;
  private readonly celDuration: Observer;
  private readonly celCost: Observer;

  constructor(instruments: AdmissionInstruments, suite: string, webhook: string) {
    this.instruments = instruments;
    this.labels = { suite, webhook };
    this.duration = instruments.duration.labels(this.labels);
    this.celDuration = instruments.celDuration.labels(this.labels);
    this.celCost = instruments.celCost.labels(this.labels);
  }

  /** One AdmissionReview answered. */
  answered(operation: string, outcome: Outcome, seconds: number, failurePolicy: 'Fail' | 'Ignore'): void {
    const index = OPERATIONS.indexOf(operation as (typeof OPERATIONS)[number]) * OUTCOMES.length + OUTCOMES.indexOf(outcome);
    let count = this.counts[index];
    if (!count) this.counts[index] = count = this.instruments.requests.labels({ ...this.labels, operation, decision: outcome });
    count.inc();
    this.duration.observe(seconds);
    if (outcome === 'error') (this.failures[failurePolicy] ??= this.instruments.failures.labels({ ...this.labels, failure_policy: failurePolicy })).inc();
  }

  /** One synchronous CEL evaluation of this webhook's rules. */
  evaluated(seconds: number, cost: number): void {
    this.celDuration.observe(seconds);
    this.celCost.observe(cost);
  }

  /** Drops every series of this webhook (its suite is gone, or no longer has it). */
  remove(): void {
    const { requests, duration, celDuration, celCost, failures } = this.instruments;
    for (const operation of OPERATIONS) for (const decision of OUTCOMES) requests.remove({ ...this.labels, operation, decision });
    for (const histogram of [duration, celDuration, celCost]) histogram.remove(this.labels);
    for (const failure_policy of ['Fail', 'Ignore']) failures.remove({ ...this.labels, failure_policy });
  }
}
