/**
 * The install files as users fetch them: real files (a symbolic link breaks copies, vendoring and
 * applying a raw file by URL), and deploy/'s CRD the same as crds/'s, so the two never drift.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = fileURLToPath(new URL('../../', import.meta.url));

describe('install manifests', function () {
  it('are real files, not symbolic links', function () {
    for (const dir of ['deploy', 'crds', 'config/samples']) {
      for (const name of fs.readdirSync(path.join(root, dir))) {
        expect(fs.lstatSync(path.join(root, dir, name)).isSymbolicLink(), `${dir}/${name} is a symbolic link`).to.equal(false);
      }
    }
  });

  it("carry one CRD: deploy/01-crd.yaml is crds/'s", function () {
    const crd = fs.readFileSync(path.join(root, 'crds/admission.portcullis.dev_admissionsuites.yaml'), 'utf8');
    expect(fs.readFileSync(path.join(root, 'deploy/01-crd.yaml'), 'utf8')).to.equal(crd);
  });
});
