/**
 * One source for every install manifest: deploy/ is `kubectl kustomize config/base`, the
 * chart's CRD is crds/'s, and docs/reference/ is the API reference rendered from the CRDs
 * (tools/manifests.ts renders all three). A copy edited by hand, or a source changed without
 * rendering again, fails here with the command that regenerates it.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { REFERENCE_DIR, REGENERATE, renderManifests, ROOT } from '../../tools/manifests.ts';

describe('install manifests rendered from config/base and crds/', function () {
  this.timeout(600_000);

  it("deploy/, the chart's CRD copies and docs/reference/ are exactly what their sources render", async function () {
    const rendered = await renderManifests();
    for (const [file, text] of rendered) {
      const target = path.join(ROOT, file);
      expect(fs.existsSync(target), `${file} is missing: run \`${REGENERATE}\``).to.equal(true);
      expect(fs.readFileSync(target, 'utf8') === text, `${file} differs from what its source renders: edit the source (its header names it) and run \`${REGENERATE}\``).to.equal(true);
    }
    // Nothing in deploy/ that no source renders: `kubectl apply -f deploy/` would install it.
    const strays = fs
      .readdirSync(path.join(ROOT, 'deploy'), { recursive: true, withFileTypes: true })
      .filter((entry) => entry.isFile())
      .map((entry) => path.relative(ROOT, path.join(entry.parentPath, entry.name)))
      .filter((file) => !rendered.has(file));
    expect(strays, `rendered from no source; remove them or add their source to config/base and tools/manifests.ts`).to.deep.equal([]);
    // Nor a reference page of a CRD no longer rendered: it would document what the API server no longer serves.
    const pages = fs
      .readdirSync(path.join(ROOT, REFERENCE_DIR))
      .map((name) => `${REFERENCE_DIR}/${name}`)
      .filter((file) => !rendered.has(file));
    expect(pages, `rendered from no CRD; remove them or add their CRD to tools/manifests.ts`).to.deep.equal([]);
  });
});
