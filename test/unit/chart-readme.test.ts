/**
 * The chart's README (tools/chart-readme.ts) documents every value of values.yaml with the default
 * the chart really has: no value left out of the table (a nested map written inline, a list's
 * items read as keys), and each default reads back as the value. The page itself is checked for
 * drift by test/e2e/manifests-drift.test.ts.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import * as yaml from 'js-yaml';
import { valueRows } from '../../tools/chart-readme.ts';

const VALUES = fs.readFileSync(new URL('../../charts/portcullis/values.yaml', import.meta.url), 'utf8');

/** Every path to a scalar, a list or an empty map in `node`. */
function leaves(node: unknown, prefix: string[] = []): string[] {
  if (node === null || typeof node !== 'object' || Array.isArray(node) || Object.keys(node).length === 0) return [prefix.join('.')];
  return Object.entries(node).flatMap(([key, value]) => leaves(value, [...prefix, key]));
}

const at = (node: unknown, key: string) => key.split('.').reduce<unknown>((n, k) => (n as Record<string, unknown>)[k], node);

describe("the chart's README: its values table", function () {
  const values = yaml.load(VALUES);
  const rows = valueRows(VALUES);

  it('has a row, with a default, for every value of values.yaml (or for the map it is written inline in)', function () {
    const withDefault = rows.filter((r) => r.default !== undefined).map((r) => r.key);
    const missing = leaves(values).filter((leaf) => !withDefault.some((key) => leaf === key || leaf.startsWith(`${key}.`)));
    expect(missing).to.deep.equal([]);
    expect(new Set(rows.map((r) => r.key)).size, 'each key once').to.equal(rows.length);
  });

  it('gives each default as the chart has it, and the comment above the key as its description', function () {
    for (const row of rows.filter((r) => r.default !== undefined)) expect(yaml.load(row.default!), row.key).to.deep.equal(at(values, row.key));
    expect(rows.find((r) => r.key === 'replicaCount')?.description).to.match(/^At least 2, so that a roll/);
    expect(rows.find((r) => r.key === 'audit.reports.installCRDs')?.description).to.match(/^The OpenReports Report and ClusterReport CRDs/);
  });
});
