/**
 * `portcullis validate` against `kubectl apply --dry-run=server` with the CRDs installed and the
 * operator's validation webhook running: a table of AdmissionSuites and AdmissionPolicies each
 * broken one way at one layer (the CRD's schema and strict field decoding, its
 * x-kubernetes-validations rules, the kind and version, CEL that does not compile, the operator's
 * other checks), and valid ones. Both refuse or accept alike; where the API server refuses, the
 * command gives its errors in its words and field paths (the webhook's message, for the last two
 * layers). Owns this table only; the command's other checks are test/e2e/cli.test.ts's, and it
 * creates nothing (dry runs only).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { expect } from 'chai';
import * as yaml from 'js-yaml';
import { kubectl } from '../support/cluster.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { eventually } from '../support/wait.ts';
import { runCli } from '../support/cli.ts';
import { GROUP, VERSION } from '../../src/api/types.ts';
import type { Operator } from '../../src/manager/operator.ts';

type Layer = 'schema' | 'kind' | 'crd-rule' | 'cel' | 'webhook' | 'valid';
type Doc = Record<string, unknown>;

const pods = [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }];
const hook = (extra: Doc = {}): Doc => ({ name: 'w', type: 'Validating', rules: pods, validations: [{ expression: 'true' }], ...extra });
const mutating = (extra: Doc = {}): Doc => ({ name: 'm', type: 'Mutating', rules: pods, mutations: [{ patchExpression: '[]' }], ...extra });
const suite = (name: string, spec: Doc | undefined, more: Doc = {}): Doc => ({ apiVersion: `${GROUP}/${VERSION}`, kind: 'AdmissionSuite', metadata: { name }, ...(spec ? { spec } : {}), ...more });
const policy = (name: string, spec: Doc, namespace = 'default'): Doc => ({ apiVersion: `${GROUP}/${VERSION}`, kind: 'AdmissionPolicy', metadata: { name, namespace }, spec });
const exception = (name: string, spec: Doc, namespace = 'default'): Doc => ({ apiVersion: `${GROUP}/${VERSION}`, kind: 'AdmissionException', metadata: { name, namespace }, spec });
const validatingPolicy = (extra: Doc = {}): Doc => ({ type: 'Validating', rules: pods, validations: [{ expression: 'true' }], ...extra });
const { validations: _v, ...hookWithoutValidations } = hook();

const CASES: [string, Layer, Doc][] = [
  // the schema, and strict field decoding
  ['misspelled field', 'schema', suite('d-mesage', { webhooks: [hook({ validations: [{ expression: 'true', mesage: 'x' }] })] })],
  ['misspelled list name', 'schema', suite('d-list-name', { webhooks: [{ ...hookWithoutValidations, validation: [{ expression: 'true' }] }] })],
  ['several unknown fields', 'schema', suite('d-unknowns', { bar: 1, webhooks: [hook({ foo: 1, validations: [{ expression: 'true', mesage: 'x' }] })] })],
  ['unknown metadata field', 'schema', suite('d-meta', { webhooks: [hook()] }, { metadata: { name: 'd-meta', labl: { a: 'b' } } })],
  ['unknown root field', 'schema', suite('d-root', { webhooks: [hook()] }, { extra: true })],
  ['failurePolicy: fail', 'schema', suite('d-failure-policy', { webhooks: [hook({ failurePolicy: 'fail' })] })],
  ['timeoutSeconds: 99', 'schema', suite('d-timeout-high', { webhooks: [hook({ timeoutSeconds: 99 })] })],
  ['timeoutSeconds: 0', 'schema', suite('d-timeout-zero', { timeoutSeconds: 0, webhooks: [hook()] })],
  ['a string for an integer', 'schema', suite('d-timeout-string', { webhooks: [hook({ timeoutSeconds: '5' })] })],
  ['a fraction for an integer', 'schema', suite('d-timeout-fraction', { webhooks: [hook({ timeoutSeconds: 1.5 })] })],
  ['a boolean for an enum string', 'schema', suite('d-type-bool', { webhooks: [hook({ type: true })] })],
  ['no webhooks', 'schema', suite('d-no-webhooks', { webhooks: [] })],
  ['no rules', 'schema', suite('d-no-rules', { webhooks: [{ name: 'w', type: 'Validating', validations: [{ expression: 'true' }] }] })],
  ['no spec', 'schema', suite('d-no-spec', undefined)],
  ['a webhook name not a DNS label', 'schema', suite('d-name-pattern', { webhooks: [hook({ name: 'Bad_Name' })] })],
  ['a webhook name of 64 characters', 'schema', suite('d-name-long', { webhooks: [hook({ name: 'a'.repeat(64) })] })],
  ['a repeated validation action', 'schema', suite('d-set-dup', { webhooks: [hook({ validationActions: ['Audit', 'Audit'] })] })],
  ['two webhooks of one name', 'schema', suite('d-map-dup', { webhooks: [hook(), hook()] })],
  ['64 matchConditions', 'schema', suite('d-conditions', { webhooks: [hook({ matchConditions: Array.from({ length: 64 }, (_, i) => ({ name: `c${i}`, expression: 'true' })) })] })],
  ['an unknown review version', 'schema', suite('d-review-versions', { webhooks: [hook({ admissionReviewVersions: ['v2'] })] })],
  ['an unknown patch op', 'schema', suite('d-patch-op', { webhooks: [mutating({ mutations: [{ patch: [{ op: 'ad', path: '/metadata/labels', value: {} }] }] })] })],
  ['a port out of range', 'schema', suite('d-port', { service: { port: 70000 }, webhooks: [hook()] })],
  ['a duration in days', 'schema', suite('d-duration', { certificate: { duration: '90d' }, webhooks: [hook()] })],
  ['an unknown key algorithm', 'schema', suite('d-key-algorithm', { certificate: { keyAlgorithm: 'EC' }, webhooks: [hook()] })],
  ['a suite name in capitals', 'schema', suite('Bad', { webhooks: [hook()] })],
  ['a variable without expression', 'schema', suite('d-variable', { webhooks: [hook({ variables: [{ name: 'x' }] })] })],
  ['an AdmissionPolicy with an admin-only field', 'schema', policy('d-policy-field', validatingPolicy({ failurePolicy: 'Fail' }))],
  ['an AdmissionPolicy of type validating', 'schema', policy('d-policy-type', validatingPolicy({ type: 'validating' }))],
  ['an AdmissionPolicy without rules', 'schema', policy('d-policy-rules', { type: 'Validating', validations: [{ expression: 'true' }] })],
  ['an AdmissionException with a misspelled field', 'schema', exception('d-exception-field', { suite: 's', webhook: 'w', reasn: 'x', reason: 'why', expires: '2030-01-01T00:00:00Z' })],
  ['an AdmissionException without expires', 'schema', exception('d-exception-expires', { suite: 's', webhook: 'w', reason: 'why' })],
  // the kind and version
  ['apiVersion v1', 'kind', { ...suite('d-v1', { webhooks: [hook()] }), apiVersion: `${GROUP}/v1` }],
  ['a misspelled kind', 'kind', { ...suite('d-kind', { webhooks: [hook()] }), kind: 'AdmissionSuit' }],
  // the CRDs' x-kubernetes-validations
  ['service and url', 'crd-rule', suite('d-service-url', { url: 'https://hooks.example', service: { name: 'x' }, webhooks: [hook()] })],
  ['an http url', 'crd-rule', suite('d-http', { url: 'http://hooks.example', webhooks: [hook()] })],
  ['a url to an IP address', 'crd-rule', suite('d-ip', { url: 'https://10.0.0.1:9443', webhooks: [hook()] })],
  ['a handler beside validations', 'crd-rule', suite('d-handler-validations', { webhooks: [hook({ handler: { name: 'RequiredLabels' } })] })],
  ['validations on a Mutating webhook', 'crd-rule', suite('d-mutating-validations', { webhooks: [hook({ type: 'Mutating' })] })],
  ['Deny with Warn', 'crd-rule', suite('d-deny-warn', { webhooks: [hook({ validationActions: ['Deny', 'Warn'] })] })],
  ['renewBefore as long as duration', 'crd-rule', suite('d-renew', { certificate: { duration: '24h', renewBefore: '24h' }, webhooks: [hook()] })],
  ['patch and patchExpression', 'crd-rule', suite('d-patch-both', { webhooks: [mutating({ mutations: [{ patch: [], patchExpression: '[]' }] })] })],
  ['a suite name of 41 characters', 'crd-rule', suite('a-suite-name-of-forty-one-characters-long', { webhooks: [hook()] })],
  ['a pattern and a rule broken together', 'crd-rule', suite('d-pattern-rule', { url: 'http://x', webhooks: [hook({ name: 'B' })] })],
  ['an AdmissionPolicy with validations and type Mutating', 'crd-rule', policy('d-policy-rule', validatingPolicy({ type: 'Mutating' }))],
  // CEL the operator's webhook compiles
  ['a CEL syntax error', 'cel', suite('d-cel-syntax', { webhooks: [hook({ validations: [{ expression: 'object.metadata.name.startsWith(' }] })] })],
  ['a validation that is not a bool', 'cel', suite('d-cel-type', { webhooks: [hook({ validations: [{ expression: 'object.metadata.name' }] })] })],
  ['params without params', 'cel', suite('d-cel-params', { webhooks: [hook({ validations: [{ expression: "params.data.max == '1'" }] })] })],
  ['a bad regex', 'cel', suite('d-cel-regex', { webhooks: [hook({ validations: [{ expression: "object.metadata.name.matches('[')" }] })] })],
  ['an AdmissionPolicy whose CEL does not compile', 'cel', policy('d-policy-cel', validatingPolicy({ validations: [{ expression: '1 +' }] }))],
  // the operator's other checks
  ['an unknown handler', 'webhook', suite('d-no-handler', { webhooks: [{ ...hookWithoutValidations, handler: { name: 'NoSuchHandler' } }] })],
  ["a Service outside the operator's namespace", 'webhook', suite('d-foreign-service', { service: { namespace: 'default', name: 'hooks' }, webhooks: [hook()] })],
  [
    'a handler config naming kube-system',
    'webhook',
    suite('d-handler-config', {
      webhooks: [
        { ...hookWithoutValidations, rules: [{ operations: ['DELETE'], apiGroups: [''], apiVersions: ['v1'], resources: ['namespaces'] }], handler: { name: 'NamespaceProtection', config: { namespaces: ['team-a', 'kube-system'] } } },
      ],
    }),
  ],
  ['an AdmissionPolicy in kube-system', 'webhook', policy('d-policy-system', validatingPolicy(), 'kube-system')],
  // valid
  ['a minimal suite', 'valid', suite('d-ok-minimal', { webhooks: [hook()] })],
  ['a suite served at a URL', 'valid', suite('d-ok-url', { url: 'https://hooks.example.com:9443', webhooks: [hook()] })],
  ['a Mutating suite', 'valid', suite('d-ok-mutating', { webhooks: [mutating({ mutations: [{ patch: [{ op: 'add', path: '/metadata/labels', value: { team: 'x' } }] }] })] })],
  ['a handler', 'valid', suite('d-ok-handler', { webhooks: [{ name: 'pull', type: 'Mutating', rules: pods, handler: { name: 'AlwaysPullImages' } }] })],
  [
    'Warn and Audit, bounds at their limits',
    'valid',
    suite('d-ok-bounds', { timeoutSeconds: 30, webhooks: [hook({ timeoutSeconds: 1, validationActions: ['Warn', 'Audit'], matchConditions: Array.from({ length: 63 }, (_, i) => ({ name: `c${i}`, expression: 'true' })) })] }),
  ],
  ['a certificate with renewBefore', 'valid', suite('d-ok-certificate', { certificate: { duration: '48h', renewBefore: '24h', keyAlgorithm: 'RSA' }, webhooks: [hook()] })],
  [
    'variables and audit annotations, a null field',
    'valid',
    suite('d-ok-variables', { failurePolicy: null, webhooks: [hook({ variables: [{ name: 'n', expression: 'object.metadata.name' }], auditAnnotations: [{ key: 'name', valueExpression: 'string(variables.n)' }] })] }),
  ],
  ['a suite with a status', 'valid', suite('d-ok-status', { webhooks: [hook()] }, { status: { webhookCount: 1 } })],
  ['a validating AdmissionPolicy', 'valid', policy('d-ok-policy', validatingPolicy({ validations: [{ expression: "has(object.metadata.labels) && 'team' in object.metadata.labels", message: 'needs a team label' }] }))],
  ['a mutating AdmissionPolicy', 'valid', policy('d-ok-policy-mutating', { type: 'Mutating', rules: pods, mutations: [{ patchExpression: '[]' }] })],
];

/** The errors `kubectl apply` printed for one object: strict decoding's unknown fields, else the field errors of "is invalid:". */
function apiServerErrors(stderr: string): string[] {
  const unknown = [...stderr.matchAll(/unknown field "[^"]+"/g)].map((m) => m[0]);
  if (unknown.length) return unknown;
  const body = /is invalid: ([\s\S]*)$/.exec(stderr.trim())?.[1];
  if (body === undefined) return [];
  return body.startsWith('\n')
    ? body
        .split('\n* ')
        .slice(1)
        .map((e) => e.trim())
    : [body.trim()];
}

describe('portcullis validate against kubectl apply --dry-run=server', function () {
  let operator: Operator;
  let dir: string;

  before(async function () {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-validate-differential-'));
    operator = await startTestOperator();
    await waitForSuiteValidation(operator);
    // The AdmissionPolicies' validation is the same webhook's: wait until it answers them too.
    const probe = path.join(dir, 'probe.yaml');
    fs.writeFileSync(probe, yaml.dump(policy('d-probe', validatingPolicy({ validations: [{ expression: '1 +' }] }))));
    await eventually(async () => ((await kubectl(['apply', '--dry-run=server', '-f', probe])).code !== 0 ? undefined : Promise.reject(new Error('admitted'))), { what: 'the policy validation webhook' });
  });

  after(async function () {
    await operator?.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it(`has at least 40 broken objects over every layer, and 10 valid`, function () {
    expect(CASES.filter(([, layer]) => layer !== 'valid').length).to.be.at.least(40);
    expect(CASES.filter(([, layer]) => layer === 'valid').length).to.be.at.least(10);
  });

  it('refuses exactly what the API server refuses, with its errors and field paths', async function () {
    const files = CASES.map(([what, , document], i) => {
      const file = path.join(dir, `${String(i).padStart(2, '0')}-${what.replace(/[^a-z0-9]+/gi, '-')}.yaml`);
      fs.writeFileSync(file, yaml.dump(document, { lineWidth: -1 }));
      return file;
    });
    const validated = await runCli(['validate', ...files]);
    expect(validated.stderr).to.equal('');
    expect(validated.code).to.equal(1);
    const lines = validated.stdout.trimEnd().split('\n');

    const disagreements: string[] = [];
    for (const [i, [what, layer]] of CASES.entries()) {
      const file = files[i]!;
      const applied = await kubectl(['apply', '--dry-run=server', '-f', file]);
      const ours = lines.filter((l) => l.startsWith(`${file}:`));
      const refused = ours.some((l) => / is invalid: /.test(l));
      if (refused !== (applied.code !== 0)) {
        disagreements.push(`${what} (${layer}): kubectl ${applied.code === 0 ? 'accepts' : 'refuses'}, validate ${refused ? 'refuses' : 'accepts'}\n  kubectl: ${applied.stdout}${applied.stderr}\n  validate: ${ours.join('\n  ')}`);
        continue;
      }
      // The table is what it says: the broken refused by the API server, the valid stored.
      if ((layer === 'valid') !== (applied.code === 0)) disagreements.push(`${what} (${layer}): the API server ${applied.code === 0 ? 'accepts' : 'refuses'} it: ${applied.stderr.trim()}`);
      if (layer === 'valid') continue;
      // Each of ours says where: file, line and document.
      if (!ours.every((l) => new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}:\\d+: document 1: `).test(l))) disagreements.push(`${what}: not located: ${ours.join('; ')}`);
      const errors = ours.map((l) => l.slice(l.indexOf(' is invalid: ') + ' is invalid: '.length));
      if (layer === 'schema' || layer === 'crd-rule') {
        const theirs = apiServerErrors(applied.stderr);
        if (JSON.stringify([...errors].sort()) !== JSON.stringify([...theirs].sort())) disagreements.push(`${what} (${layer}): errors differ\n  kubectl: ${theirs.join(' | ')}\n  validate: ${errors.join(' | ')}`);
      } else if (layer === 'kind') {
        if (!applied.stderr.includes(errors[0]!)) disagreements.push(`${what}: kubectl says ${applied.stderr.trim()}, validate ${errors[0]}`);
      } else {
        // The operator's webhook: its whole message, which names the fields.
        const message = ours[0]!.replace(/^.*?: document 1: /, '');
        if (!applied.stderr.includes(`denied the request: ${message}`)) disagreements.push(`${what} (${layer}): kubectl says ${applied.stderr.trim()}\n  validate: ${message}`);
      }
    }
    expect(disagreements, disagreements.join('\n')).to.deep.equal([]);
  });

  it('exits 0 for the valid ones alone', async function () {
    const files = CASES.filter(([, layer]) => layer === 'valid').map(([what, , document]) => {
      const file = path.join(dir, `valid-${what.replace(/[^a-z0-9]+/gi, '-')}.yaml`);
      fs.writeFileSync(file, yaml.dump(document));
      return file;
    });
    const validated = await runCli(['validate', ...files]);
    expect(validated.code, validated.stdout).to.equal(0);
  });

  it('refuses an empty file, as kubectl apply does', async function () {
    const file = path.join(dir, 'empty.yaml');
    fs.writeFileSync(file, '# nothing yet\n');
    const applied = await kubectl(['apply', '--dry-run=server', '-f', file]);
    expect(applied.code).to.not.equal(0);
    expect(applied.stderr).to.contain('no objects passed to apply');
    const validated = await runCli(['validate', file]);
    expect(validated.code).to.equal(1);
    expect(validated.stdout).to.equal(`${file}: no objects passed to apply\n`);
  });
});
