/**
 * The install files as users fetch them: real files (a symbolic link breaks copies, vendoring and
 * applying a raw file by URL), and a CRD that documents every field it declares (what `kubectl explain` shows).
 */
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as k8s from '@kubernetes/client-node';

const root = fileURLToPath(new URL('../../', import.meta.url));

/** The one image the project names: under its own registry path, never a bare Docker Hub name someone else may own. */
const IMAGE_REPOSITORY = 'ghcr.io/portcullis-dev/operator';

describe('install manifests', function () {
  it("name one version everywhere, and the image under the project's registry path", function () {
    const version = (JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { version: string }).version;
    const chart = k8s.loadYaml<{ version: string; appVersion: string }>(fs.readFileSync(path.join(root, 'charts/portcullis/Chart.yaml'), 'utf8'));
    const values = k8s.loadYaml<{ image: { repository: string; tag: string } }>(fs.readFileSync(path.join(root, 'charts/portcullis/values.yaml'), 'utf8'));
    const images = (dir: string) =>
      fs
        .readdirSync(path.join(root, dir), { recursive: true, withFileTypes: true })
        .filter((entry) => entry.isFile() && entry.name.endsWith('.yaml'))
        .flatMap((entry) => [...fs.readFileSync(path.join(entry.parentPath, entry.name), 'utf8').matchAll(/^\s*image:\s*["']?([^"'\s]+)/gm)].map((m) => m[1]!));
    expect({ chart: chart.version, appVersion: chart.appVersion }, 'Chart.yaml').to.deep.equal({ chart: version, appVersion: version });
    expect(values.image, "the chart's image (its tag defaults to appVersion)").to.include({ repository: IMAGE_REPOSITORY, tag: '' });
    expect([...new Set([...images('deploy'), ...images('config/base')])], 'the images deploy/ and config/base name').to.deep.equal([`${IMAGE_REPOSITORY}:${version}`]);
  });

  it('are real files, not symbolic links', function () {
    for (const dir of ['deploy', 'crds', 'config/base', 'config/samples']) {
      for (const name of fs.readdirSync(path.join(root, dir))) {
        expect(fs.lstatSync(path.join(root, dir, name)).isSymbolicLink(), `${dir}/${name} is a symbolic link`).to.equal(false);
      }
    }
  });
});

interface Schema {
  description?: string;
  properties?: Record<string, Schema>;
  items?: Schema;
}

/** The paths of declared fields with no description; `metadata` is ObjectMeta's, which kubectl explains itself. */
function undocumented(schema: Schema, path: string): string[] {
  const missing: string[] = [];
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    if (path === '' && name === 'metadata') continue;
    const field = path ? `${path}.${name}` : name;
    if (!property.description?.trim()) missing.push(field);
    missing.push(...undocumented(property, field));
    if (property.items) missing.push(...undocumented(property.items, `${field}[]`));
  }
  return missing;
}

describe('the AdmissionSuite CRD', function () {
  it('describes every field it declares', function () {
    const crd = k8s.loadYaml<{ spec: { versions: { schema: { openAPIV3Schema: Schema } }[] } }>(fs.readFileSync(path.join(root, 'crds/admission.portcullis.dev_admissionsuites.yaml'), 'utf8'));
    for (const version of crd.spec.versions) {
      const schema = version.schema.openAPIV3Schema;
      expect(undocumented(schema, '')).to.deep.equal([]);
      // Guards the walk itself: it reaches fields nested in lists.
      expect(schema.properties!.spec!.properties!.webhooks!.items!.properties!.mutations!.items!.properties!.patch!.items!.properties!.op!.description).to.be.a('string');
    }
  });
});
