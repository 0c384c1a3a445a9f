/**
 * The CLI's mirror of the API server's CRD checks (src/cli/crd-schema.ts) piece by piece, and the
 * lines readLocatedDocuments (src/cli/files.ts) gives its errors. What the API server itself says
 * for the same objects is test/e2e/validate-differential.test.ts's; this file touches no cluster.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import { crdErrors, fieldPath, ofOurGroup } from '../../../src/cli/crd-schema.ts';
import { readLocatedDocuments } from '../../../src/cli/files.ts';

const pods = [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }];
const hook = (extra: Record<string, unknown> = {}) => ({ name: 'w', type: 'Validating', rules: pods, validations: [{ expression: 'true' }], ...extra });
const suite = (spec: Record<string, unknown>, more: Record<string, unknown> = {}) => ({ apiVersion: 'admission.portcullis.dev/v1alpha1', kind: 'AdmissionSuite', metadata: { name: 's' }, spec, ...more });
const texts = (document: Record<string, unknown>) => crdErrors(document).map((e) => e.text);
const NOT_CHECKED = '<nil>: Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation';

describe('the CRDs checked offline as the API server checks a create', function () {
  it('writes field paths as the API server does', function () {
    expect(fieldPath(['spec', 'webhooks', 0, 'validations', 1, 'expression'])).to.equal('spec.webhooks[0].validations[1].expression');
    expect(fieldPath([])).to.equal('<nil>');
  });

  it('checks only our group, and refuses a kind or version our CRDs do not serve', function () {
    expect(ofOurGroup({ apiVersion: 'v1', kind: 'ConfigMap' })).to.equal(false);
    expect(ofOurGroup({ apiVersion: 'admission.portcullis.dev/v1', kind: 'AdmissionSuite' })).to.equal(true);
    expect(texts({ ...suite({ webhooks: [hook()] }), apiVersion: 'admission.portcullis.dev/v1' })).to.deep.equal(['no matches for kind "AdmissionSuite" in version "admission.portcullis.dev/v1"']);
    expect(texts({ ...suite({ webhooks: [hook()] }), kind: 'AdmissionSuit' })).to.deep.equal(['no matches for kind "AdmissionSuit" in version "admission.portcullis.dev/v1alpha1"']);
  });

  it('names every unknown field, sorted, and nothing else (strict decoding stops there)', function () {
    const document = suite({ bar: 1, webhooks: [hook({ failurePolicy: 'fail', validations: [{ expression: 'true', mesage: 'x' }] })] }, { metadata: { name: 's', labl: {} } });
    expect(texts(document)).to.deep.equal(['unknown field "metadata.labl"', 'unknown field "spec.bar"', 'unknown field "spec.webhooks[0].validations[0].mesage"']);
    // anything under x-kubernetes-preserve-unknown-fields
    expect(texts(suite({ webhooks: [hook({ objectSelector: { anything: { at: 'all' } } })] }))).to.deep.equal([]);
  });

  it("refuses types, enums, bounds, lengths, patterns and required fields in the API server's words; after a blocking one, no rule runs", function () {
    expect(texts(suite({ url: 'http://x', webhooks: [hook({ failurePolicy: 'fail' })] }))).to.deep.equal(['spec.webhooks[0].failurePolicy: Unsupported value: "fail": supported values: "Fail", "Ignore"', NOT_CHECKED]);
    expect(texts(suite({ webhooks: [hook({ timeoutSeconds: 99 })] }))).to.deep.equal(['spec.webhooks[0].timeoutSeconds: Invalid value: 99: spec.webhooks[0].timeoutSeconds in body should be less than or equal to 30']);
    expect(texts(suite({ webhooks: [hook({ timeoutSeconds: '5' })] }))).to.deep.equal(['spec.webhooks[0].timeoutSeconds: Invalid value: "string": spec.webhooks[0].timeoutSeconds in body must be of type integer: "string"', NOT_CHECKED]);
    expect(texts(suite({ webhooks: [hook({ name: 'a'.repeat(64) })] }))).to.deep.equal(['spec.webhooks[0].name: Too long: may not be more than 63 bytes', NOT_CHECKED]);
    expect(texts(suite({ webhooks: [] }))).to.deep.equal(['spec.webhooks: Invalid value: 0: spec.webhooks in body should have at least 1 items']);
    expect(texts(suite({ webhooks: [{ name: 'w', type: 'Validating', validations: [{ expression: 'true' }] }] }))).to.deep.equal(['spec.webhooks[0].rules: Required value', NOT_CHECKED]);
    // a pattern is not blocking: the rules still run
    expect(texts(suite({ url: 'http://x', webhooks: [hook({ name: 'B' })] }))).to.deep.equal([
      'spec.webhooks[0].name: Invalid value: "B": spec.webhooks[0].name in body should match \'^[a-z0-9]([-a-z0-9]*[a-z0-9])?$\'',
      'spec.url: Invalid value: "http://x": must be an https URL with no user, query or fragment',
    ]);
  });

  it('refuses duplicates in set and map lists at the repeating item', function () {
    expect(texts(suite({ webhooks: [hook({ validationActions: ['Audit', 'Audit'] })] }))).to.deep.equal(['spec.webhooks[0].validationActions[1]: Duplicate value: "Audit"']);
    expect(texts(suite({ webhooks: [hook(), hook()] }))).to.deep.equal(['spec.webhooks[1]: Duplicate value: {"name":"w"}']);
  });

  it("runs the CRDs' rules with the operator's CEL, a scalar's value shown, an object's not", function () {
    expect(texts(suite({ webhooks: [hook({ validationActions: ['Deny', 'Warn'] })] }))).to.deep.equal(['spec.webhooks[0].validationActions: Invalid value: Deny and Warn may not be used together']);
    expect(texts(suite({ certificate: { duration: '24h', renewBefore: '24h' }, webhooks: [hook()] }))).to.deep.equal(['spec.certificate: Invalid value: renewBefore must be shorter than duration']);
    expect(texts(suite({ certificate: { duration: '48h', renewBefore: '24h' }, webhooks: [hook()] }))).to.deep.equal([]);
    expect(texts(suite({ url: 'https://10.0.0.1:9443', webhooks: [hook()] }))).to.deep.equal([
      'spec.url: Invalid value: "https://10.0.0.1:9443": must name its host by DNS name, not an IP address: the API server sends no TLS server name to an IP',
    ]);
    expect(texts({ ...suite({ webhooks: [hook()] }), metadata: { name: 'Bad' } })).to.deep.equal([
      "metadata.name: Invalid value: \"Bad\": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
      '<nil>: Invalid value: metadata.name must be a DNS label of at most 40 characters',
    ]);
  });

  it('skips what a create drops: a null field and the status', function () {
    expect(texts(suite({ failurePolicy: null, webhooks: [hook()] }, { status: { webhookCount: 'x' } }))).to.deep.equal([]);
  });

  it('locates each error at its line, counting documents that are not empty', function () {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-crd-schema-'));
    try {
      const file = path.join(dir, 'suites.yaml');
      fs.writeFileSync(file, '# a comment\n---\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: { name: c }\n---\nspec:\n  webhooks:\n    - name: a\n      validations:\n        - expression: "true"\n          mesage: x\n');
      const [configMap, second] = readLocatedDocuments(file);
      expect(configMap!.index).to.equal(1);
      expect(configMap!.line([])).to.equal(4);
      expect(second!.index).to.equal(2);
      expect(second!.line(['spec', 'webhooks', 0, 'validations', 0, 'mesage'])).to.equal(13);
      expect(second!.line(['spec', 'webhooks', 0])).to.equal(10);
      // a path the file does not have: its nearest enclosing field
      expect(second!.line(['spec', 'webhooks', 0, 'rules'])).to.equal(10);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
