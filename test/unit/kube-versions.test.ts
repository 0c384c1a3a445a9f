/**
 * The supported Kubernetes range is the tested one, and is stated where users read it: from the
 * oldest version with a control-plane module (test/controlplane/versions/, run by `npm run
 * test:oldest`, which `npm test` runs) to the newest (test/controlplane/go.mod, every other run);
 * the chart's kubeVersion and docs/operating.md name the same two.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import { olderKubeVersions } from '../../src/local/binaries.ts';

const read = (file: string) => fs.readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');
const moduleMinor = (goMod: string) =>
  /^require k8s\.io\/kubernetes v1\.(\d+)\.\d+$|^\tk8s\.io\/kubernetes v1\.(\d+)\.\d+$/m
    .exec(goMod)
    ?.slice(1)
    .find((m) => m !== undefined);

describe('supported Kubernetes versions', function () {
  const older = olderKubeVersions();
  const oldest = older[0]!;
  const newest = `1.${moduleMinor(read('test/controlplane/go.mod'))}`;

  it('has an older version to test, each module building the Kubernetes its folder names', function () {
    expect(older).to.not.have.length(0);
    for (const version of older) expect(`1.${moduleMinor(read(`test/controlplane/versions/${version}/go.mod`))}`, version).to.equal(version);
    expect(Number(oldest.split('.')[1])).to.be.below(Number(newest.split('.')[1]));
  });

  it('runs the oldest in npm test', function () {
    const scripts = (JSON.parse(read('package.json')) as { scripts: Record<string, string> }).scripts;
    expect(scripts['test:oldest']).to.contain(`PORTCULLIS_KUBE_VERSION=${oldest} `);
    expect(scripts.test).to.contain('npm run test:oldest');
  });

  it("is the chart's kubeVersion and the docs' range", function () {
    expect(read('charts/portcullis/Chart.yaml')).to.match(new RegExp(`^kubeVersion: ">=${oldest.replace('.', '\\.')}\\.0-0"$`, 'm'));
    expect(read('docs/operating.md')).to.contain(`**Kubernetes ${oldest} to ${newest}**`);
    expect(read('docs/getting-started.md')).to.contain(`Kubernetes ${oldest} to ${newest}`);
  });
});
