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

describe('install manifests', function () {
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
