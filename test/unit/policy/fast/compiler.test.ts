/**
 * The compiled shortcut (src/policy/fast): which expressions it covers, and that where it
 * answers, the answer and its cost are cel-js's, and where it cannot (an unexpected kind of value,
 * a missing key, an error, the cost limit), cel-js answers, errors worded as before. Every other
 * test checks the same on its own expressions (test/support/verify-compiled.ts).
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { compile } from '../../../../src/policy/engine/environment.ts';
import { compileProgram } from '../../../../src/policy/fast/compiler.ts';
import { BAIL } from '../../../../src/policy/fast/runtime.ts';
import { COST_LIMIT_MESSAGE, meter, PER_CALL_LIMIT } from '../../../../src/policy/cost/meter.ts';
import { benchSuite } from '../../../../bench/fixtures.ts';
import { celErrorText } from '../../../../src/policy/engine/errors.ts';
import { IntsInPlace, toCel } from '../../../../src/policy/values/convert.ts';
import { buildActivation } from '../../../../src/policy/engine/activation.ts';
import { ActivationReads } from '../../../../src/policy/values/reads.ts';
import { compileRules } from '../../../../src/policy/engine/rules.ts';
import type { AdmissionRequest } from '../../../../src/api/admission-review.ts';

const program = (expression: string) => compile(expression, 'f', [], { params: true });
const activation = (object: unknown) => ({ object: toCel(object), oldObject: null, params: null, namespaceObject: null, request: toCel({ operation: 'CREATE', userInfo: { username: 'alice' } }), variables: {} });

/** What the shortcut alone makes of `expression`: its value, or 'bail' when it hands over to cel-js. */
function shortcut(expression: string, object: unknown, limit = Infinity): unknown {
  const compiled = compileProgram(program(expression).ast);
  if (!compiled) throw new Error(`not compiled: ${expression}`);
  const saved = { ...meter };
  meter.cost = 0;
  meter.limit = limit;
  try {
    return compiled(activation(object));
  } catch (err) {
    if (err === BAIL) return 'bail';
    throw err;
  } finally {
    Object.assign(meter, saved);
  }
}

/** cel-js's answer and cost, through the compiled program's usual path (the shortcut, falling back to cel-js). */
function evaluate(expression: string, object: unknown): { value: unknown; cost: number } {
  try {
    const value = program(expression)(activation(object) as never);
    return { value, cost: meter.cost };
  } catch (err) {
    return { value: `error: ${celErrorText(err)}`, cost: meter.cost };
  }
}

const pod = {
  metadata: { name: 'web', labels: { app: 'web', team: 'payments' } },
  spec: {
    containers: [
      { name: 'a', image: 'registry.example.com/a:1', securityContext: { runAsNonRoot: true }, resources: { limits: { memory: '1Gi' } } },
      { name: 'b', image: 'docker.io/b:2', securityContext: { runAsNonRoot: false } },
    ],
    terminationGracePeriodSeconds: 30,
    ratio: 0.5,
    aliases: ['a', 'x'],
  },
};

describe('policy: the compiled shortcut', () => {
  it('covers every validation of the bench suite, and the usual shapes of admission rules', () => {
    const bench = benchSuite().spec.webhooks[0]!.validations!.map((v) => v.expression);
    const usual = [
      "has(object.metadata.labels) && 'team' in object.metadata.labels",
      'object.spec.containers.exists(c, c.name == "a") ? object.spec.containers.size() > 1 : false',
      "object.metadata.labels.all(k, !k.startsWith('kubernetes.io/') && !k.contains('..') && !k.endsWith('-'))",
      'size(object.metadata.name) <= 63 && object.spec.replicas >= -1',
      'oldObject == null || object.spec.ratio < 1.5',
      "object.metadata.labels['app.kubernetes.io/name'] == 'web' && object.spec.containers[0].name == 'a'",
      "object.metadata.name + '-x' == 'web-x' && object.metadata.name.matches('^[a-z]+$') && matches(object.metadata.name, 'w')",
      "object.metadata.labels.team in ['payments', 'search'] && 'a' in object.spec.aliases",
    ];
    for (const expression of [...bench, ...usual]) expect(compileProgram(program(expression).ast), expression).to.be.a('function');
  });

  it('leaves every other expression to cel-js', () => {
    const others = [
      'object.spec.containers.map(c, c.name).size() > 0',
      "object.spec.containers.filter(c, c.name == 'a').size() == 1",
      'variables.v == 1',
      'object.?spec.replicas.orValue(1) == 1',
      'object.spec.replicas in [1, 2]',
      "object.metadata.name.find('[a-z]+') == 'web'",
      'object.spec.containers.all(i, c, c.name != "")',
      '[1, 2].all(x, x > 0)',
    ];
    for (const expression of others) expect(compileProgram(program(expression).ast), expression).to.equal(undefined);
  });

  // [expression, the shortcut's own answer ('bail': cel-js answers), the answer]
  const table: [string, unknown, unknown][] = [
    ['object.spec.containers.all(c, c.image.startsWith("registry.example.com/"))', false, false],
    ['object.spec.containers.exists(c, c.securityContext.runAsNonRoot == false)', true, true],
    ['object.spec.containers.all(c, has(c.resources.limits) && has(c.resources.limits.memory))', 'bail', 'error: no such key: resources'],
    ['object.metadata.labels.all(k, k.size() < 64)', true, true],
    ['has(object.metadata.labels.team) && !has(object.spec.hostNetwork)', true, true],
    ['object.spec.terminationGracePeriodSeconds <= 120', true, true],
    ['object.spec.missing == 1', 'bail', 'error: no such key: missing'],
    // an int against a double: cel-go's cross-type comparison, left to cel-js
    ['object.spec.terminationGracePeriodSeconds > object.spec.ratio', 'bail', true],
    ['object.spec.containers[0].name == "a" && object.spec.containers[1]["name"] == "b"', true, true],
    ['object.spec.containers[2].name == "c"', 'bail', "error: index '2' out of range in list size '2'"],
    ["object.metadata.labels['team'] == 'payments' && object.metadata.labels['app'] + '-1' == 'web-1'", true, true],
    ["object.metadata.labels['tier'] == 'x'", 'bail', 'error: no such key: tier'],
    ["object.metadata.name.matches('^w[a-z]+$') && !matches(object.metadata.name, 'x')", true, true],
    ["object.metadata.name.matches(object.spec.aliases[0] + '(')", 'bail', 'error: error parsing regexp: missing closing ): `a(`'],
    ["object.metadata.labels.team in ['payments', 'search'] && !('z' in object.spec.aliases)", true, true],
    // an int in a list of strings: heterogeneous equality, cel-js's to answer
    ['object.spec.terminationGracePeriodSeconds in object.spec.aliases', 'bail', false],
    ['object.spec.terminationGracePeriodSeconds + 1 == 31', 'bail', true],
    ['object.metadata.name == 1', 'bail', false],
    ['object.spec.containers.size() == 2 && size(object.metadata.labels) == 2', true, true],
    ["'app' in object.metadata.labels && !('tier' in object.metadata.labels)", true, true],
    ['object.metadata.name.size() > 1 || object.spec.missing', true, true],
    ['object.spec.missing || object.metadata.name.size() > 1', 'bail', true],
    ['object.spec.containers.all(c, c.name)', 'bail', 'error: no such overload'],
  ];
  for (const [expression, own, answer] of table) {
    it(`answers ${expression} as cel-js does`, () => {
      if (own !== undefined) expect(shortcut(expression, pod), 'the shortcut').to.deep.equal(own);
      const { value } = evaluate(expression, pod);
      expect(value).to.deep.equal(answer);
    });
  }

  it('reads the JSON as parsed: whole numbers are ints, others doubles, and cel-js gets it converted when it is needed', () => {
    const json = JSON.parse('{"spec": {"replicas": 3, "ratio": 0.5}}');
    const raw = (expression: string) => {
      const compiled = compileProgram(program(expression).ast)!;
      try {
        return compiled({ object: json, oldObject: null, params: null, namespaceObject: null, request: null, variables: {} });
      } catch (err) {
        if (err === BAIL) return 'bail';
        throw err;
      }
    };
    expect(raw('object.spec.replicas <= 5 && object.spec.replicas == 3 && object.spec.replicas != 4')).to.equal(true);
    expect(raw('object.spec.ratio < 1.5 && object.spec.ratio == 0.5 && object.spec.replicas > object.spec.replicas.size()')).to.equal('bail');
    expect(raw('object.spec.ratio < 1.5 && object.spec.ratio == 0.5 && object.spec.replicas >= size(object.spec)')).to.equal(true);
    // an int against a double is cel-go's cross-type comparison: cel-js's to answer
    expect(raw('object.spec.replicas > object.spec.ratio')).to.equal('bail');
    // a whole double literal would read as an int: not compiled
    expect(compileProgram(program('object.spec.ratio < 2.0').ast)).to.equal(undefined);

    // through a webhook: the activation is left as parsed, converted only for an expression cel-js answers
    const request = { uid: 'u', kind: { group: '', version: 'v1', kind: 'Pod' }, resource: { group: '', version: 'v1', resource: 'pods' }, operation: 'CREATE', userInfo: { username: 'alice' }, object: json } as unknown as AdmissionRequest;
    const ints = new IntsInPlace();
    const programs = [program('object.spec.replicas == 3'), program('object.spec.replicas + 1 == 4'), program('type(object.spec.replicas) == int')];
    const activation = buildActivation(request, json, [], {}, ints, new ActivationReads(programs), true);
    try {
      expect(programs[0]!(activation as never)).to.equal(true);
      expect(json.spec.replicas, 'still as parsed after a compiled program').to.equal(3);
      expect(programs[1]!(activation as never)).to.equal(true);
      expect(json.spec.replicas, 'converted for cel-js').to.equal(3n);
      expect(programs[2]!(activation as never)).to.equal(true);
    } finally {
      ints.restore();
    }
    expect(json.spec.replicas, 'restored').to.equal(3);
  });

  it('reads the composited variables whose own expressions compile', () => {
    const compiledVariables = new Set(['containers', 'count']);
    const withVariables = (expression: string) => compile(expression, 'f', [], { params: true, compiledVariables });
    expect(withVariables('variables.count <= 64 && variables.containers.all(c, has(c.image))').compiled).to.equal(true);
    expect(withVariables('variables.ratio > 1.5').compiled, 'a variable that is not compiled').to.equal(false);

    const webhook = (validations: string[]) =>
      compileRules(
        's',
        {
          name: 'w',
          type: 'Validating',
          rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
          variables: [
            { name: 'containers', expression: 'object.spec.containers' },
            { name: 'count', expression: 'variables.containers.size()' },
            { name: 'ratio', expression: 'object.spec.ratio * 2.0' },
            { name: 'missing', expression: 'object.spec.missing' },
          ],
          validations: validations.map((expression) => ({ expression })),
        },
        'p',
        'Fail',
      );
    const request = { uid: 'u', kind: { group: '', version: 'v1', kind: 'Pod' }, resource: { group: '', version: 'v1', resource: 'pods' }, operation: 'CREATE', userInfo: { username: 'alice' }, object: pod } as unknown as AdmissionRequest;
    expect(webhook(['variables.count == 2 && variables.containers.all(c, c.image.contains("/"))', 'variables.ratio == 1.0'])(request)).to.deep.equal({ allowed: true });
    expect(webhook(['variables.count == 3'])(request)).to.include({ allowed: false, message: 'failed expression: variables.count == 3' });
    expect(webhook(['variables.missing == 1'])(request)).to.include({
      allowed: false,
      message: `expression 'variables.missing == 1' resulted in error: composited variable "missing" fails to evaluate: no such key: missing`,
    });
  });

  it('leaves everything to cel-js where code generation is disallowed', () => {
    const script = `
      import { compile } from './src/policy/engine/environment.ts';
      const program = compile('object.spec.replicas <= 5', 'f', ['bool'], { params: false });
      console.log(JSON.stringify({ compiled: program.compiled, answer: program({ object: { spec: { replicas: 3n } }, oldObject: null, request: null, namespaceObject: null, variables: {} }) }));`;
    const run = spawnSync(process.execPath, ['--disallow-code-generation-from-strings', '--input-type=module', '-e', script], { cwd: fileURLToPath(new URL('../../../..', import.meta.url)), encoding: 'utf8' });
    expect(run.stderr).to.equal('');
    expect(JSON.parse(run.stdout)).to.deep.equal({ compiled: false, answer: true });
  });

  it('charges what cel-js charges, and hands a runaway loop to cel-js to stop with its words', () => {
    const items = Array.from({ length: 300_000 }, (_, i) => i);
    // `all` over n ints costs 5n + 3 (cel-go's figure; see cost.test.ts)
    expect(evaluate('object.items.all(x, x >= 0)', { items: items.slice(0, 1000) })).to.deep.equal({ value: true, cost: 5003 });
    expect(shortcut('object.items.all(x, x >= 0)', { items }, PER_CALL_LIMIT)).to.equal('bail');
    expect(evaluate('object.items.all(x, x >= 0)', { items }).value).to.equal(`error: ${COST_LIMIT_MESSAGE}`);
  });
});
