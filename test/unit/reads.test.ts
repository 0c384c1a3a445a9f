/** What a webhook's expressions can read of the activation, and that converting only that keeps CEL's view of the object whole. */
import { expect } from 'chai';
import { compile } from '../../src/policy/cel.ts';
import { ActivationReads, type Reads } from '../../src/policy/reads.ts';
import { buildActivation } from '../../src/policy/activation.ts';
import { IntsInPlace } from '../../src/policy/values.ts';
import type { AdmissionRequest } from '../../src/api/review.ts';

const program = (expression: string) => compile(expression, 'f', [], { params: false, mixedLiterals: true });
const readsOf = (...expressions: string[]) => new ActivationReads(expressions.map(program));

/** A Reads as plain JSON, for comparing: true, or { field: ... }. */
function plain(reads: Reads | undefined): unknown {
  if (reads === undefined || reads === true) return reads;
  return Object.fromEntries([...reads].map(([k, v]) => [k, plain(v)]));
}

describe('policy: what expressions read of the activation', function () {
  it('follows field chains to where a value is used whole', function () {
    const reads = readsOf('object.spec.containers.all(c, c.image != "")', 'has(object.metadata.labels.team)', 'object.spec.replicas > 1');
    expect(plain(reads.of('object'))).to.deep.equal({ spec: { containers: true, replicas: true }, metadata: { labels: { team: true } } });
    expect(reads.uses('object')).to.equal(true);
    expect(reads.uses('oldObject')).to.equal(false);
    expect(reads.of('oldObject')).to.equal(undefined);
  });

  it('takes a constant string index as a field, and anything else as reading the whole value', function () {
    expect(plain(readsOf('object.metadata["labels"].size() > 0').of('object'))).to.deep.equal({ metadata: { labels: true } });
    expect(plain(readsOf('object.spec.containers[0].name == "a"').of('object'))).to.deep.equal({ spec: { containers: true } });
    expect(plain(readsOf('object.metadata.labels[object.kind] == "x"').of('object'))).to.deep.equal({ metadata: { labels: true }, kind: true });
    expect(plain(readsOf('object.?spec.replicas.orValue(0) > 1').of('object'))).to.deep.equal({ spec: { replicas: true } });
  });

  it('reads the whole object when it is used other than by selecting a field', function () {
    expect(readsOf('object == oldObject').of('object')).to.equal(true);
    expect(readsOf('cel.bind(o, object, o.spec.replicas > 1)').of('object')).to.equal(true);
    expect(plain(readsOf('cel.bind(s, object.spec, s.replicas > 1)').of('object'))).to.deep.equal({ spec: true });
    expect(plain(readsOf('object.spec.replicas > 1', 'object.spec == oldObject.spec').of('object'))).to.deep.equal({ spec: true });
  });

  it('converts what is read so ints stay ints, and leaves the rest as JSON', function () {
    const expressions = [
      'type(object.spec.replicas) == int && object.spec.replicas / 2 == 1',
      'object.spec.template.spec.containers.all(c, c.ports.all(p, type(p.containerPort) == int))',
      'cel.bind(s, object.spec.strategy, type(s.rollingUpdate.maxSurge) == int)',
      'has(object.status.readyReplicas)',
    ];
    const reads = readsOf(...expressions);
    const object = {
      spec: {
        replicas: 3,
        strategy: { rollingUpdate: { maxSurge: 1 } },
        template: { spec: { containers: [{ name: 'a', ports: [{ containerPort: 80 }] }], terminationGracePeriodSeconds: 30 } },
        revisionHistoryLimit: 10,
      },
      status: { readyReplicas: 2, observedGeneration: 4 },
    };
    const request = { uid: 'u', kind: { group: 'apps', version: 'v1', kind: 'Deployment' }, resource: { group: 'apps', version: 'v1', resource: 'deployments' }, operation: 'CREATE', object } as unknown as AdmissionRequest;
    const ints = new IntsInPlace();
    try {
      const activation = buildActivation(request, object, [], {}, ints, reads);
      for (const expression of expressions) expect(program(expression)(activation as never), expression).to.equal(true);
      // not read by any expression: left as JSON
      expect(typeof object.spec.revisionHistoryLimit).to.equal('number');
      expect(typeof object.status.observedGeneration).to.equal('number');
      expect(typeof object.status.readyReplicas).to.equal('bigint');
    } finally {
      ints.restore();
    }
    expect(object.spec.replicas).to.equal(3);
    expect(object.status.readyReplicas).to.equal(2);
  });
});
