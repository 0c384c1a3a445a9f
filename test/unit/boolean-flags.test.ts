/**
 * True/false flags given bare, as the chart's Deployment writes them (`- --policy-reports`): they
 * mean true. Before, the operator refused to start with "argument missing" whenever the chart set
 * audit.reports.policyReports, and no test ran the operator with what the chart writes.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import { parseCommandLine, type OperatorConfig } from '../../src/config.ts';

const config = (argv: string[]): OperatorConfig => {
  const parsed = parseCommandLine(argv, {});
  if (!('config' in parsed)) throw new Error('not a run');
  return parsed.config;
};

describe('operator flags: true/false flags given bare', function () {
  it('a bare true/false flag means true; a following value, or =value, is still read', function () {
    const bare = config(['--policy-reports', '--native-enforcement', '--audit', 'false', '--admission-thread=false']);
    expect([bare.policyReports, bare.nativeEnforcement, bare.audit, bare.admissionThread]).to.deep.equal([true, true, false, false]);
    expect(config(['--native-enforcement', '--policy-reports=false'])).to.include({ nativeEnforcement: true, policyReports: false });
  });

  it('a flag that takes a value still needs one', function () {
    expect(() => parseCommandLine(['--namespace'], {})).to.throw("Option '--namespace <value>' argument missing");
  });

  it("every flag the chart's Deployment writes bare starts the operator", function () {
    const template = fs.readFileSync(new URL('../../charts/portcullis/templates/deployment.yaml', import.meta.url), 'utf8');
    const bare = [...template.matchAll(/^\s*- (--[a-z-]+)\s*$/gm)].map((m) => m[1]!);
    expect(bare).to.include.members(['--policy-reports', '--native-enforcement']);
    for (const flag of bare) expect(() => config([flag]), flag).to.not.throw();
  });
});
