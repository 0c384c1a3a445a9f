/** The request path's histogram, as a Prometheus scrape shows it through a prom-client Registry. */
import { expect } from 'chai';
import client from 'prom-client';
import { BucketHistogram, SeriesCounter } from '../../../src/health/request-series.ts';

describe('health: the request path series', () => {
  it('exposes cumulative buckets up to +Inf, _sum and _count per series, as a histogram', async () => {
    const registry = new client.Registry();
    const histogram = new BucketHistogram({ name: 'test_seconds', help: 'Test latency.', buckets: [0.1, 1, 0.01], registers: [registry] });
    const fast = histogram.labels({ suite: 's', webhook: 'a' });
    for (const v of [0.005, 0.01, 0.05, 0.5, 3]) fast.observe(v);
    histogram.labels({ webhook: 'b', suite: 's' }).observe(0.2);
    expect(histogram.labels({ suite: 's', webhook: 'a' }), 'one series per label set, in any key order').to.equal(fast);

    const text = await registry.metrics();
    expect(text).to.contain('# HELP test_seconds Test latency.\n# TYPE test_seconds histogram\n');
    const line = (series: string) =>
      text
        .split('\n')
        .find((l) => l.startsWith(`${series} `) || l === series)
        ?.split(' ')
        .pop();
    expect(line('test_seconds_bucket{suite="s",webhook="a",le="0.01"}'), 'a value equal to a bound falls in it').to.equal('2');
    expect(line('test_seconds_bucket{suite="s",webhook="a",le="0.1"}')).to.equal('3');
    expect(line('test_seconds_bucket{suite="s",webhook="a",le="1"}')).to.equal('4');
    expect(line('test_seconds_bucket{suite="s",webhook="a",le="+Inf"}')).to.equal('5');
    expect(Number(line('test_seconds_sum{suite="s",webhook="a"}'))).to.be.closeTo(3.565, 1e-9);
    expect(line('test_seconds_count{suite="s",webhook="a"}')).to.equal('5');
    expect(line('test_seconds_count{webhook="b",suite="s"}') ?? line('test_seconds_count{suite="s",webhook="b"}')).to.equal('1');
  });

  it('ignores a value that is not a finite number, and forgets a removed series', async () => {
    const registry = new client.Registry();
    const histogram = new BucketHistogram({ name: 'test_cost', help: 'Cost.', buckets: [10], registers: [registry] });
    const series = histogram.labels({ suite: 's' });
    series.observe(Number.NaN);
    series.observe(Infinity);
    series.observe(5);
    expect(series.count).to.equal(1);
    histogram.remove({ suite: 's' });
    expect(await registry.metrics()).to.not.contain('test_cost_count');
  });

  it('a SeriesCounter counts per resolved series and is exposed as a counter', async () => {
    const registry = new client.Registry();
    const counter = new SeriesCounter({ name: 'test_requests_total', help: 'Requests.', registers: [registry] });
    const allowed = counter.labels({ suite: 's', decision: 'allowed' });
    allowed.inc();
    allowed.inc();
    counter.labels({ suite: 's', decision: 'denied' }).inc();
    const text = await registry.metrics();
    expect(text).to.contain('# TYPE test_requests_total counter\n');
    expect(text).to.contain('test_requests_total{suite="s",decision="allowed"} 2\n');
    expect(text).to.contain('test_requests_total{suite="s",decision="denied"} 1');
    counter.remove({ decision: 'denied', suite: 's' });
    expect(await registry.metrics()).to.not.contain('decision="denied"');
  });
});
