/**
 * The release workflow (.github/workflows/release.yml) cannot run here, so what can be checked is:
 * actionlint (built from its Go module, pinned, as the project builds its other tools) finds no
 * error in any workflow, and does find one in a broken copy (the check can fail); and the release
 * publishes what issue 51 names, under the names the install uses: the image the chart and deploy/
 * pull, for amd64 and arm64, signed keyless, with its SBOM and provenance; the chart as an OCI
 * artifact; the npm package with provenance; only after the tests, on a tag that is the version.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as yaml from 'js-yaml';
import { SBOM_FILE } from '../../tools/build.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const WORKFLOWS = path.join(ROOT, '.github/workflows');
/** Pinned; `go run module@version` checks it against the Go checksum database. */
const ACTIONLINT = 'github.com/rhysd/actionlint/cmd/actionlint@v1.7.12';

function actionlint(files: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile('go', ['run', ACTIONLINT, '-no-color', ...files], { cwd: os.tmpdir(), timeout: 300_000 }, (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, output: `${stdout}${stderr}` }));
  });
}

interface Step {
  uses?: string;
  run?: string;
  with?: Record<string, unknown>;
}
interface Workflow {
  on: { push: { tags: string[] } };
  env: Record<string, string>;
  jobs: Record<string, { needs?: string | string[]; steps: Step[]; permissions?: Record<string, string> }>;
}

describe('the release workflow', function () {
  this.timeout(600_000);
  const file = path.join(WORKFLOWS, 'release.yml');
  const text = fs.readFileSync(file, 'utf8');
  const workflow = yaml.load(text) as Workflow;
  const steps = (job: string) => workflow.jobs[job]!.steps;
  const runs = (job: string) =>
    steps(job)
      .map((s) => s.run ?? '')
      .join('\n');
  const uses = (job: string) => steps(job).map((s) => s.uses?.split('@')[0]);

  it('passes actionlint, which finds the error in a broken copy', async function () {
    const files = fs
      .readdirSync(WORKFLOWS)
      .filter((f) => /\.ya?ml$/.test(f))
      .map((f) => path.join(WORKFLOWS, f));
    const clean = await actionlint(files);
    expect(clean.output).to.equal('');
    expect(clean.code).to.equal(0);
    const broken = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'workflow-')), 'release.yml');
    fs.writeFileSync(broken, text.replace('needs: [test, image]', 'needs: [test, imgae]'));
    const refused = await actionlint([broken]);
    expect(refused.code).to.equal(1);
    expect(refused.output).to.match(/job "chart" needs job "imgae" which does not exist/);
  });

  it('publishes, after the tests pass on a tag that is the version, the image the install pulls, the chart and the npm package', function () {
    expect(workflow.on.push.tags).to.deep.equal(['v*.*.*']);
    expect(runs('test')).to.contain('bash .ci/run');
    expect(runs('test')).to.contain('require("./package.json").version');
    for (const job of ['image', 'chart', 'npm']) expect([workflow.jobs[job]!.needs].flat(), job).to.include('test');

    // The image: the name the chart and deploy/ pull, both architectures, signed, with its SBOM and provenance.
    const values = yaml.load(fs.readFileSync(path.join(ROOT, 'charts/portcullis/values.yaml'), 'utf8')) as { image: { repository: string } };
    expect(workflow.env.IMAGE).to.equal(values.image.repository);
    expect(fs.readFileSync(path.join(ROOT, 'deploy/03-deployment.yaml'), 'utf8')).to.contain(`image: ${workflow.env.IMAGE}:`);
    const build = steps('image').find((s) => s.uses?.startsWith('docker/build-push-action@'))!;
    expect(build.with).to.deep.include({ platforms: 'linux/amd64,linux/arm64', push: true, sbom: true, provenance: 'mode=max' });
    expect(runs('image')).to.match(/cosign sign --yes "\$IMAGE@\$DIGEST"/);
    expect(runs('image')).to.match(/cosign attest --yes --type cyclonedx --predicate sbom\.cdx\.json/);
    // The SBOM attested is the one the build wrote into the image (tools/build.ts' SBOM_FILE, in dist/).
    expect(runs('image')).to.contain(`/app/dist/${SBOM_FILE}`);
    expect(uses('image')).to.include.members(['sigstore/cosign-installer', 'actions/attest-build-provenance']);
    expect(workflow.jobs.image!.permissions).to.deep.include({ 'id-token': 'write', packages: 'write' });

    // The chart, packaged as the node test installs it, pushed as an OCI artifact; the npm package with provenance.
    expect(runs('chart')).to.contain('helm package charts/portcullis');
    expect(runs('chart')).to.match(/helm push "portcullis-\$VERSION\.tgz" "\$CHARTS"/);
    expect(workflow.env.CHARTS).to.match(/^oci:\/\/ghcr\.io\/portcullis-dev\//);
    expect(runs('npm')).to.contain('npm publish --provenance');
    expect(workflow.jobs.npm!.permissions).to.deep.include({ 'id-token': 'write' });
  });
});
