/** The declarative rules of a webhook, evaluated as the admission server would: CEL validations and JSON-patch mutations. */
import { expect } from 'chai';
import { compileRules } from '../../../../src/policy/engine/rules.ts';
import { CompileError } from '../../../../src/policy/celjs/program.ts';
import type { WebhookSpec } from '../../../../src/api/types.ts';
import { fixtures, requestOf } from '../../../fixtures/reviews.ts';

const deploymentRule = [{ operations: ['CREATE'], apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments'] }];

function validating(spec: Partial<WebhookSpec>): WebhookSpec {
  return { name: 'w', type: 'Validating', rules: deploymentRule, ...spec };
}

describe('policy: validations', function () {
  const request = () => requestOf(fixtures.deploymentCreate());

  it('admits when every expression holds and denies with the message and reason code when one does not', function () {
    const admit = compileRules('s', validating({ validations: [{ expression: 'object.spec.replicas <= 5' }, { expression: 'object.spec.replicas < 3', message: 'fewer than 3, please', reason: 'Forbidden' }] }), 'spec.webhooks[0]', 'Fail');
    const decision = admit(request());
    expect(decision).to.include({ allowed: false, code: 403, reason: 'Forbidden', message: 'fewer than 3, please' });
    expect(admit({ ...request(), object: { spec: { replicas: 1 } } })).to.deep.equal({ allowed: true });
  });

  it('treats whole JSON numbers as int, as Kubernetes does', function () {
    const admit = compileRules('s', validating({ validations: [{ expression: 'type(object.spec.replicas) == int && object.spec.replicas / 2 == 1 && object.spec.replicas % 2 == 1' }] }), 'p', 'Fail');
    expect(admit(request()).allowed).to.equal(true);
  });

  it('leaves the request as it found it: numbers stay JSON numbers, also when an expression fails', function () {
    const admit = compileRules(
      's',
      validating({
        validations: [{ expression: 'object.spec.replicas == 3' }, { expression: 'object.spec.nope == 1' }, { expression: 'request.options.gracePeriodSeconds == 30' }],
        auditAnnotations: [{ key: 'r', valueExpression: 'string(object.spec.replicas)' }],
      }),
      'p',
      'Fail',
    );
    const given = { ...request(), options: { gracePeriodSeconds: 30 } };
    const before = structuredClone(given);
    expect(admit(given).allowed).to.equal(false);
    expect(given).to.deep.equal(before);
    expect(typeof (given.object as { spec: { replicas: unknown } }).spec.replicas).to.equal('number');
  });

  it('falls back from an empty or failing messageExpression to message, then to the expression', function () {
    const admit = (validation: object) => compileRules('s', validating({ validations: [{ expression: 'false', ...validation }] }), 'p', 'Fail')(request());
    expect(admit({ messageExpression: "'replicas: ' + string(object.spec.replicas)" }).message).to.equal('replicas: 3');
    expect(admit({ messageExpression: "''", message: 'static' }).message).to.equal('static');
    expect(admit({ messageExpression: "'x' + object.nope", message: 'static' }).message).to.equal('static');
    expect(admit({}).message).to.equal('failed expression: false');
  });

  it('defaults the reason to Invalid (422) and maps each reason to its HTTP code', function () {
    const codes: Record<string, number> = { Unauthorized: 401, Forbidden: 403, Invalid: 422, RequestEntityTooLarge: 413 };
    expect(compileRules('s', validating({ validations: [{ expression: 'false' }] }), 'p', 'Fail')(request()).code).to.equal(422);
    for (const [reason, code] of Object.entries(codes)) {
      const decision = compileRules('s', validating({ validations: [{ expression: 'false', reason: reason as never }] }), 'p', 'Fail')(request());
      expect(decision.code, reason).to.equal(code);
    }
  });

  it('turns Warn into warnings and Audit into audit annotations, admitting', function () {
    const admit = compileRules(
      's',
      validating({
        validations: [
          { expression: 'false', message: 'm1' },
          { expression: 'false', message: 'm2' },
        ],
        validationActions: ['Warn', 'Audit'],
      }),
      'p',
      'Fail',
    );
    const decision = admit(request());
    expect(decision.allowed).to.equal(true);
    expect(decision.warnings).to.deep.equal(['m1', 'm2']);
    expect(JSON.parse(decision.auditAnnotations!.validation_failure!)).to.deep.equal([
      { message: 'm1', policy: 's', binding: 'w', expressionIndex: 0, validationActions: ['Warn', 'Audit'] },
      { message: 'm2', policy: 's', binding: 'w', expressionIndex: 1, validationActions: ['Warn', 'Audit'] },
    ]);
  });

  it('evaluates every validation and answers with the first denial, as the API server does', function () {
    const admit = compileRules(
      's',
      validating({ validations: [{ expression: 'true' }, { expression: 'false', message: 'second', reason: 'Forbidden' }, { expression: 'false', message: 'third' }], validationActions: ['Deny', 'Audit'] }),
      'p',
      'Fail',
    );
    const decision = admit(request());
    expect(decision).to.include({ allowed: false, code: 403, message: 'second' });
    expect(JSON.parse(decision.auditAnnotations!.validation_failure!).map((f: { expressionIndex: number }) => f.expressionIndex)).to.deep.equal([1, 2]);
  });

  it('trims messages and refuses multi-line ones, as the API server does', function () {
    const admit = compileRules('s', validating({ validations: [{ expression: 'false', message: '  padded  ' }] }), 'p', 'Fail');
    expect(admit(request())).to.include({ allowed: false, message: 'padded' });
    const multiLine = compileRules('s', validating({ validations: [{ expression: 'false', messageExpression: "'two\\nlines'", message: 'one line' }] }), 'p', 'Fail');
    expect(multiLine(request()).message).to.equal('one line');
  });

  it('records auditAnnotations whatever the decision, leaving out null and blank values', function () {
    const admit = compileRules(
      's',
      validating({
        validations: [{ expression: 'true' }],
        auditAnnotations: [
          { key: 'replicas', valueExpression: "'replicas: ' + string(object.spec.replicas)" },
          { key: 'none', valueExpression: 'null' },
          { key: 'blank', valueExpression: "'  '" },
        ],
      }),
      'p',
      'Fail',
    );
    expect(admit(request())).to.deep.equal({ allowed: true, auditAnnotations: { replicas: 'replicas: 3' } });
  });

  it('follows failurePolicy when an expression errors at run time', function () {
    const spec = validating({ validations: [{ expression: 'object.spec.missing > 1' }] });
    const fail = compileRules('s', spec, 'p', 'Fail')(request());
    expect(fail.allowed).to.equal(false);
    expect(fail).to.include({ code: 422, message: "expression 'object.spec.missing > 1' resulted in error: no such key: missing" });
    expect(compileRules('s', spec, 'p', 'Ignore')(request())).to.deep.equal({ allowed: true });
  });

  it('computes variables lazily and at most once per request', function () {
    const admit = compileRules(
      's',
      validating({
        variables: [
          { name: 'r', expression: 'object.spec.replicas' },
          { name: 'twice', expression: 'variables.r * 2' },
        ],
        validations: [{ expression: 'variables.twice == 6 && variables.r == 3' }],
      }),
      'p',
      'Fail',
    );
    expect(admit(request()).allowed).to.equal(true);
    const failing = compileRules('s', validating({ variables: [{ name: 'gone', expression: 'object.spec.nope' }], validations: [{ expression: 'variables.gone == 1' }] }), 'p', 'Fail');
    expect(failing(request()).message).to.equal(`expression 'variables.gone == 1' resulted in error: composited variable "gone" fails to evaluate: no such key: nope`);
  });

  it('binds every variable an expression names, wherever it names it (macros, has(), optionals)', function () {
    const expressions = [
      'has(object.spec.replicas)',
      '[1].all(x, has(object.spec.replicas))',
      'object.?spec.?replicas.hasValue()',
      "[1].exists(x, request.operation == 'CREATE')",
      '[object].all(o, o.spec.replicas > 0)',
      '[1].transformList(i, v, object.spec.replicas)[0] > 0',
      'variables.r > 0',
    ];
    for (const expression of expressions) {
      const admit = compileRules('s', validating({ variables: [{ name: 'r', expression: 'object.spec.replicas' }], validations: [{ expression }] }), 'p', 'Fail');
      expect(admit(request()), expression).to.deep.equal({ allowed: true });
    }
  });

  it('refuses at compile time what VAP refuses, naming the field', function () {
    const compileError = (spec: WebhookSpec) => {
      try {
        compileRules('s', spec, 'spec.webhooks[2]', 'Fail');
      } catch (err) {
        return err as CompileError;
      }
      throw new Error('compiled');
    };
    expect(compileError(validating({ validations: [{ expression: 'object.spec.replicas <' }] })).field).to.equal('spec.webhooks[2].validations[0].expression');
    expect(compileError(validating({ validations: [{ expression: '1 + 1' }] })).message).to.contain('must evaluate to bool but got int');
    // As in VAP, an untyped result is refused: it could be anything at run time.
    expect(compileError(validating({ validations: [{ expression: 'object.metadata.name' }] })).message).to.contain('must evaluate to bool but got dyn');
    expect(compileError(validating({ validations: [{ expression: 'true', messageExpression: 'object.metadata.name' }] })).message).to.contain('must evaluate to string but got dyn');
    expect(compileError(validating({ validations: [{ expression: 'true', messageExpression: '42' }] })).field).to.equal('spec.webhooks[2].validations[0].messageExpression');
    expect(compileError(validating({ validations: [{ expression: 'undeclared.x' }] })).field).to.equal('spec.webhooks[2].validations[0].expression');
  });
});

describe('policy: mutations', function () {
  const pod = () => requestOf(fixtures.podCreate());
  const mutating = (mutations: WebhookSpec['mutations']): WebhookSpec => ({ name: 'm', type: 'Mutating', rules: deploymentRule, mutations });

  it('applies literal patches in order, each condition seeing the result of the one before', function () {
    const admit = compileRules(
      's',
      mutating([
        { condition: '!has(object.metadata.labels)', patch: [{ op: 'add', path: '/metadata/labels', value: {} }] },
        { condition: "!('team' in object.metadata.labels)", patch: [{ op: 'add', path: '/metadata/labels/team', value: 'unassigned' }] },
      ]),
      'p',
      'Fail',
    );
    expect(admit(pod()).patch).to.deep.equal([{ op: 'add', path: '/metadata/labels', value: { team: 'unassigned' } }]);
  });

  it('patches JSON numbers and leaves the request as it found it', function () {
    const admit = compileRules(
      's',
      mutating([
        { condition: 'object.spec.terminationGracePeriodSeconds == 30', patch: [{ op: 'replace', path: '/spec/terminationGracePeriodSeconds', value: 10 }] },
        { patchExpression: '[{"op": "add", "path": "/spec/priority", "value": object.spec.terminationGracePeriodSeconds * 2}]' },
      ]),
      'p',
      'Fail',
    );
    const given = pod();
    (given.object as { spec: Record<string, unknown> }).spec.terminationGracePeriodSeconds = 30;
    const before = structuredClone(given);
    expect(admit(given).patch).to.deep.equal([
      { op: 'replace', path: '/spec/terminationGracePeriodSeconds', value: 10 },
      { op: 'add', path: '/spec/priority', value: 20 },
    ]);
    expect(given).to.deep.equal(before);
  });

  it('applies a patchExpression over all containers and is idempotent', function () {
    const admit = compileRules(
      's',
      mutating([
        {
          patchExpression: 'object.spec.containers.map(c, {"op": "add", "path": "/spec/containers/" + string(object.spec.containers.indexOf(c)) + "/imagePullPolicy", "value": "Always"})',
        },
      ]),
      'p',
      'Fail',
    );
    const request = pod();
    const decision = admit(request);
    expect(decision.patch).to.deep.equal([{ op: 'add', path: '/spec/containers/0/imagePullPolicy', value: 'Always' }]);
    const containers = (request.object as { spec: { containers: { imagePullPolicy?: string }[] } }).spec.containers;
    containers[0]!.imagePullPolicy = 'Always';
    expect(admit(request)).to.deep.equal({ allowed: true });
  });

  it('builds patches whose values are of every type (no homogeneous-literal rule: mutations are not VAP)', function () {
    const admit = compileRules('s', mutating([{ patchExpression: "[{'op': 'add', 'path': '/metadata/annotations', 'value': {'a': 'b'}}, {'op': 'add', 'path': '/spec/priority', 'value': 7}]" }]), 'p', 'Fail');
    expect(admit(pod()).patch).to.deep.equal([
      { op: 'add', path: '/spec/priority', value: 7 },
      { op: 'add', path: '/metadata/annotations', value: { a: 'b' } },
    ]);
  });

  it('follows failurePolicy when a patch cannot apply', function () {
    const spec = mutating([{ patch: [{ op: 'replace', path: '/metadata/annotations/x', value: 'y' }] }]);
    const failed = compileRules('s', spec, 'spec.webhooks[0]', 'Fail')(pod());
    expect(failed.allowed).to.equal(false);
    expect(failed.message).to.contain('spec.webhooks[0].mutations[0]');
    expect(compileRules('s', spec, 'p', 'Ignore')(pod())).to.deep.equal({ allowed: true });
  });
});
