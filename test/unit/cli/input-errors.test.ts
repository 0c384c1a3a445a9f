/**
 * Errors a person can act on, from `portcullis` run as a user runs it: a test case without
 * `expect:` or `name:` is named by file and case (not a JavaScript TypeError), and a command that
 * needs a cluster, with none configured, says to give one (not client-node's words about TLS for
 * its http://localhost:8080 fallback). Exit 2, no stack trace.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { REPO, runCli } from '../../support/cli.ts';

const CLI = fileURLToPath(new URL('../../../src/cli/main.ts', import.meta.url));
const SAMPLE = path.join(REPO, 'config/samples/replica-limit.yaml');

describe('portcullis: errors a person can act on', function () {
  this.timeout(30_000);
  let dir: string;
  before(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-input-errors-'))));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));

  for (const [what, caseText, said] of [
    ['without expect:', '  - name: no expect\n    object: { apiVersion: v1, kind: ConfigMap, metadata: { name: x, namespace: shop } }\n', 'case "no expect" needs expect:'],
    ['without name:', '  - object: { apiVersion: v1, kind: ConfigMap, metadata: { name: x, namespace: shop } }\n    expect: { allowed: true }\n', 'case 1 needs a name:'],
    ['that is not a mapping', '  - just a string\n', 'case 1 is not a mapping'],
  ] as const) {
    it(`names the file and case of a test case ${what}`, async function () {
      const file = path.join(dir, `${what.replace(/\W+/g, '-')}.portcullis-test.yaml`);
      fs.writeFileSync(file, `suites: [${SAMPLE}]\ncases:\n${caseText}`);
      const result = await runCli(['test', file]);
      expect(result.code).to.equal(2);
      expect(result.stderr).to.contain(`portcullis: ${file}: ${said}`);
      expect(result.stderr).to.not.match(/TypeError|\n\s+at /);
    });
  }

  it('says to give a cluster when a command needs one and none is configured', function () {
    const env: NodeJS.ProcessEnv = { ...process.env, HOME: dir };
    delete env.KUBECONFIG;
    delete env.KUBERNETES_SERVICE_HOST;
    const result = spawnSync(process.execPath, [CLI, 'audit', SAMPLE], { encoding: 'utf8', env, cwd: dir });
    expect(result.status).to.equal(2);
    expect(result.stderr).to.contain('audit needs a cluster to read objects from: no cluster configured: give --kubeconfig FILE');
    expect(result.stderr).to.not.contain('HTTP protocol is not allowed');
  });
});
