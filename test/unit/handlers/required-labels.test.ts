/**
 * RequiredLabels: no upstream plugin. The cases of Gatekeeper library's k8srequiredlabels tests
 * (a violation there is one problem here; all problems come in one denial) and Kyverno's
 * require-labels sample.
 */
import { expect } from 'chai';
import { requiredLabels } from '../../../src/handlers/required-labels.ts';
import { EMPTY_VIEW } from '../../../src/handlers/handler.ts';
import { requestFor } from '../../fixtures/reviews.ts';
import { suiteErrors } from '../../fixtures/patch.ts';

const lbl = (key: string, allowedRegex?: string) => ({ key, ...(allowedRegex !== undefined ? { allowedRegex } : {}) });
const configOf = (c: Record<string, unknown>) => {
  const parsed = requiredLabels.parseConfig(c);
  expect(parsed.errors).to.deep.equal([]);
  return parsed.config;
};
const object = (labels?: Record<string, string>, extra: Record<string, unknown> = {}) => ({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'nginx', namespace: 'team-a', ...(labels ? { labels } : {}), ...extra } });
const validate = (request: ReturnType<typeof requestFor>, config: Record<string, unknown>) => requiredLabels.validate!(request, configOf(config), EMPTY_VIEW);
/** The problems a denial lists (0 when allowed). */
const problems = (labels: Record<string, string> | undefined, config: Record<string, unknown>) => {
  const decision = validate(requestFor('configmaps', 'CREATE', { object: object(labels) }), config);
  if (decision.allowed) return 0;
  expect(decision).to.include({ code: 403, reason: 'Forbidden' });
  expect(decision.message).to.match(/^RequiredLabels: /);
  return decision.message!.split('; ').length - 1; // the last part says what to do
};

describe('handlers: RequiredLabels', function () {
  // Gatekeeper library k8srequiredlabels src_test.rego
  const cases: [string, Record<string, string> | undefined, { key: string; allowedRegex?: string }[], number][] = [
    ['input_has_label', { some: 'label' }, [lbl('some', 'label')], 0],
    ['input_has_extra_label', { some: 'label', new: 'thing' }, [lbl('some', 'label')], 0],
    ['input_has_extra_label_req2', { some: 'label', new: 'thing' }, [lbl('some', 'label'), lbl('new', 'thing')], 0],
    ['input_missing_label', { some_other: 'label' }, [lbl('some', 'label')], 1],
    ['input_wrong_value', { some: 'label2' }, [lbl('some', 'label$')], 1],
    ['input_one_missing', { some: 'label' }, [lbl('some', 'label'), lbl('other', 'label')], 1],
    ['input_wrong_empty', undefined, [lbl('some', 'label$')], 1],
    ['input_two_missing (one problem naming both)', undefined, [lbl('some', 'label'), lbl('other', 'label')], 1],
    ['input_two_wrong', { some: 'lbe', other: 'lbe' }, [lbl('some', 'label'), lbl('other', 'label')], 2],
    ['input_two_allowed', { some: 'gray', other: 'grey' }, [lbl('some', 'gr[ae]y'), lbl('other', 'gr[ae]y')], 0],
    ['an empty allowedRegex allows any value', { some: 'anything' }, [lbl('some', '')], 0],
  ];
  for (const [name, labels, required, expected] of cases) it(name, () => expect(problems(labels, { labels: required })).to.equal(expected));

  it('input_message: the config message replaces the text', function () {
    expect(validate(requestFor('configmaps', 'CREATE', { object: object({ some: 'label2' }) }), { message: 'WRONG_VALUE', labels: [lbl('some', 'label$')] }).message).to.equal('RequiredLabels: WRONG_VALUE');
  });

  it('lists every missing label at once, then every value that does not match', function () {
    const decision = validate(requestFor('configmaps', 'CREATE', { object: object({ tier: 'gold' }) }), { labels: [lbl('owner'), lbl('team'), lbl('tier', '^(web|db)$')] });
    expect(decision.message).to.equal('RequiredLabels: ConfigMap "nginx": missing required labels owner, team; label tier="gold" does not match ^(web|db)$; add or correct them in metadata.labels');
  });

  // Kyverno require-labels: app.kubernetes.io/name on Pods
  it("Kyverno's require-labels: a Pod without app.kubernetes.io/name is denied, one with it admitted", function () {
    const config = { labels: [lbl('app.kubernetes.io/name', '.+')] };
    const bare = { metadata: { generateName: 'web-' }, spec: { containers: [{ name: 'a', image: 'nginx' }] } };
    expect(validate(requestFor('pods', 'CREATE', { object: bare }), config).message).to.equal('RequiredLabels: Pod "web-": missing required label app.kubernetes.io/name; add or correct them in metadata.labels');
    const labelled = { metadata: { name: 'web', labels: { 'app.kubernetes.io/name': 'web' } }, spec: {} };
    expect(validate(requestFor('pods', 'CREATE', { object: labelled }), config)).to.deep.equal({ allowed: true });
  });

  it('an UPDATE that leaves the labels as they were is allowed; one that changes them is checked', function () {
    const config = { labels: [lbl('owner')] };
    const old = object({ a: 'b' });
    expect(validate(requestFor('configmaps', 'UPDATE', { object: { ...object({ a: 'b' }), data: { x: '1' } }, oldObject: old }), config)).to.deep.equal({ allowed: true });
    expect(validate(requestFor('configmaps', 'UPDATE', { object: object({ a: 'c' }), oldObject: old }), config).allowed).to.equal(false);
    expect(validate(requestFor('configmaps', 'UPDATE', { object: object({ a: 'c', owner: 'me' }), oldObject: old }), config).allowed).to.equal(true);
  });

  it('never refuses an UPDATE of an object being deleted (a finalizer removal), DELETE with no object, or a subresource', function () {
    const config = { labels: [lbl('owner')] };
    const deleting = object({}, { deletionTimestamp: '2025-01-01T00:00:00Z', finalizers: [] });
    expect(validate(requestFor('configmaps', 'UPDATE', { object: deleting, oldObject: object({ x: 'y' }, { finalizers: ['f'] }) }), config)).to.deep.equal({ allowed: true });
    expect(validate(requestFor('configmaps', 'DELETE', {}), config)).to.deep.equal({ allowed: true });
    expect(validate(requestFor('deployments', 'UPDATE', { object: object(), oldObject: object({ x: 'y' }), subResource: 'scale' }), config)).to.deep.equal({ allowed: true });
  });

  it('serves any resource; a suite with a bad config is refused, naming the field', function () {
    const anything = [{ operations: ['CREATE', 'UPDATE'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }];
    expect(suiteErrors({ type: 'Validating', rules: anything, handler: { name: 'RequiredLabels', config: { labels: [lbl('owner')] } } })).to.deep.equal([]);
    expect(suiteErrors({ type: 'Validating', rules: anything, handler: { name: 'RequiredLabels' } }).map((e) => e.field)).to.deep.equal(['spec.webhooks[0].handler.config.labels']);
    const bad = suiteErrors({
      type: 'Validating',
      rules: anything,
      handler: { name: 'RequiredLabels', config: { labels: [lbl('not a key'), lbl('ok', '(unclosed'), { key: 'x', regex: 'y' }], mesage: 'typo' } },
    });
    expect(bad.map((e) => e.field)).to.have.members([
      'spec.webhooks[0].handler.config.labels[0].key',
      'spec.webhooks[0].handler.config.labels[1].allowedRegex',
      'spec.webhooks[0].handler.config.labels[2].regex',
      'spec.webhooks[0].handler.config.mesage',
    ]);
    expect(bad.find((e) => e.field.endsWith('allowedRegex'))!.message).to.contain('missing closing )');
    expect(suiteErrors({ type: 'Mutating', rules: anything, handler: { name: 'RequiredLabels', config: { labels: [lbl('owner')] } } }).map((e) => e.field)).to.deep.equal(['spec.webhooks[0].type']);
  });
});
