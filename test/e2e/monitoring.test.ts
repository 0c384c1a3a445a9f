/**
 * The alert rules and the Grafana dashboard (charts/portcullis/files): promtool (built from Go
 * modules, `build.sh promtool`) checks the rules and runs their unit tests, in which each alert
 * fires on the synthetic series it is meant for and not on healthy ones; every metric they name is
 * one the operator exposes; the chart renders them unchanged behind its toggles.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import * as yaml from 'js-yaml';
import { ensureHelm, ensurePromtool } from '../../src/local/binaries.ts';
import { Metrics } from '../../src/health/metrics.ts';
import { parseExposition } from '../support/prometheus.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const RULES = path.join(ROOT, 'charts/portcullis/files/portcullis.rules.yaml');
const RULES_TEST = path.join(ROOT, 'test/monitoring/portcullis.rules.test.yaml');
const DASHBOARD = path.join(ROOT, 'charts/portcullis/files/grafana-dashboard.json');
const ALERTS = [
  'PortcullisCertificateExpiringSoon',
  'PortcullisCACertificateExpiringSoon',
  'PortcullisCertificateRotationFailing',
  'PortcullisWebhookErrors',
  'PortcullisWebhookLatencyHigh',
  'PortcullisSuiteNotReady',
  'PortcullisNoLeader',
  'PortcullisAuditFailuresIncreased',
  'PortcullisAuditStalled',
  'PortcullisConnectionsNearLimit',
];

const run = (binary: string, args: string[]) =>
  new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(binary, args, { maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
  });

describe('monitoring: alert rules (promtool) and the Grafana dashboard', function () {
  // The first build of promtool from Go modules takes minutes.
  this.timeout(1_800_000);
  let promtool: string;

  before(async function () {
    promtool = await ensurePromtool();
  });

  it('the rules file passes promtool check rules, with every alert the issue names', async function () {
    const result = await run(promtool, ['check', 'rules', RULES]);
    expect(result.code, result.stdout + result.stderr).to.equal(0);
    expect(result.stdout).to.contain(`SUCCESS: ${ALERTS.length} rules found`);
  });

  it('each alert fires on the series it is meant for, and not on healthy ones (promtool test rules)', async function () {
    const tested = (yaml.load(fs.readFileSync(RULES_TEST, 'utf8')) as { tests: { alert_rule_test: { alertname: string; exp_alerts: unknown[] }[] }[] }).tests.flatMap((t) => t.alert_rule_test);
    for (const alert of ALERTS)
      expect(
        tested.some((t) => t.alertname === alert && t.exp_alerts.length > 0),
        `${alert} is tested firing`,
      ).to.equal(true);
    const result = await run(promtool, ['test', 'rules', RULES_TEST]);
    expect(result.code, result.stdout + result.stderr).to.equal(0);
    expect(result.stdout).to.contain('SUCCESS');
  });

  it('promtool test rules fails a wrong expectation (so the run above can fail)', async function () {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-rules-'));
    try {
      const test = {
        rule_files: [RULES],
        evaluation_interval: '1m',
        tests: [{ interval: '1m', input_series: [{ series: 'portcullis_leader{instance="a"}', values: '0x20' }], alert_rule_test: [{ eval_time: '10m', alertname: 'PortcullisNoLeader', exp_alerts: [] }] }],
      };
      fs.writeFileSync(path.join(dir, 'wrong.test.yaml'), yaml.dump(test));
      const result = await run(promtool, ['test', 'rules', path.join(dir, 'wrong.test.yaml')]);
      expect(result.code).to.equal(1);
      expect(result.stdout + result.stderr).to.contain('PortcullisNoLeader');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the rules and the dashboard name only metrics the operator exposes', async function () {
    const families = parseExposition(await new Metrics().render());
    const exposed = new Set<string>();
    for (const family of families.values()) {
      exposed.add(family.name);
      if (family.type === 'histogram') for (const suffix of ['_bucket', '_sum', '_count']) exposed.add(family.name + suffix);
      for (const sample of family.samples) exposed.add(sample.name);
    }
    const dashboard = JSON.parse(fs.readFileSync(DASHBOARD, 'utf8')) as { panels: { title: string; targets?: { expr: string }[] }[] };
    const exprs = [...dashboard.panels.flatMap((p) => (p.targets ?? []).map((t) => t.expr)), ...(yaml.load(fs.readFileSync(RULES, 'utf8')) as { groups: { rules: { expr: string }[] }[] }).groups.flatMap((g) => g.rules.map((r) => r.expr))];
    const named = new Set(exprs.flatMap((expr) => expr.match(/portcullis_[a-z0-9_]+/g) ?? []));
    expect(named.size).to.be.at.least(15);
    expect(
      [...named].filter((name) => !exposed.has(name)),
      'metrics named but not exposed',
    ).to.deep.equal([]);
    // Every dashboard query is valid PromQL to Prometheus' own parser (promtool's promql formatter).
    for (const expr of exprs) {
      const result = await run(promtool, ['--experimental', 'promql', 'format', expr.replaceAll('$__rate_interval', '5m').replaceAll('$suite', '.*')]);
      expect(result.code, `${expr}: ${result.stderr}`).to.equal(0);
    }
  });

  it('the chart renders the same rules as a PrometheusRule and the dashboard as a ConfigMap, only when asked', async function () {
    const helm = await ensureHelm();
    const chart = path.join(ROOT, 'charts/portcullis');
    const template = async (...set: string[]) => {
      const result = await run(helm, ['template', 'portcullis', chart, '--namespace', 'portcullis-system', ...set.flatMap((s) => ['--set', s])]);
      expect(result.code, result.stderr).to.equal(0);
      return (yaml.loadAll(result.stdout) as ({ kind: string; metadata: { name: string; labels: Record<string, string> }; spec?: unknown; data?: Record<string, string> } | null)[]).filter((o) => o !== null);
    };
    expect((await template()).filter((o) => o.kind === 'PrometheusRule' || o.metadata.name === 'portcullis-grafana-dashboard')).to.deep.equal([]);
    const objects = await template('metrics.prometheusRule.enabled=true', 'metrics.prometheusRule.labels.release=prom', 'metrics.dashboard.enabled=true');
    const rule = objects.find((o) => o.kind === 'PrometheusRule')!;
    expect(rule.metadata.labels.release).to.equal('prom');
    expect(rule.spec).to.deep.equal(yaml.load(fs.readFileSync(RULES, 'utf8')));
    const dashboard = objects.find((o) => o.kind === 'ConfigMap' && o.metadata.name === 'portcullis-grafana-dashboard')!;
    expect(dashboard.metadata.labels.grafana_dashboard).to.equal('1');
    expect(JSON.parse(dashboard.data!['portcullis.json']!)).to.deep.equal(JSON.parse(fs.readFileSync(DASHBOARD, 'utf8')));
  });
});
