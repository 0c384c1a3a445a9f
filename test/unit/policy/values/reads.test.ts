/** What a webhook's expressions can read of the activation, and that converting only that keeps CEL's view of the object whole. */
import { expect } from 'chai';
import { compile } from '../../../../src/policy/engine/environment.ts';
import { ActivationReads, type Reads } from '../../../../src/policy/values/reads.ts';
import { buildActivation } from '../../../../src/policy/engine/activation.ts';
import { IntsInPlace } from '../../../../src/policy/values/convert.ts';
import type { AdmissionRequest } from '../../../../src/api/admission-review.ts';

const program = (expression: string) => compile(expression, 'f', [], { params: false, mixedLiterals: true });
const readsOf = (...expressions: string[]) => new ActivationReads(expressions.map(program));

/** A Reads as plain JSON, for comparing: true, or { field: ..., '[*]': what is read of each element }. */
function plain(reads: Reads | undefined): unknown {
  if (reads === undefined || reads === true) return reads;
  const out: Record<string, unknown> = Object.fromEntries([...reads.fields].map(([k, v]) => [k, plain(v)]));
  if (reads.elements) out['[*]'] = plain(reads.elements);
  return out;
}

describe('policy: what expressions read of the activation', function () {
  it('follows field chains to where a value is used whole', function () {
    const reads = readsOf('object.spec.containers[0].image != ""', 'has(object.metadata.labels.team)', 'object.spec.replicas > 1');
    expect(plain(reads.of('object'))).to.deep.equal({ spec: { containers: true, replicas: true }, metadata: { labels: { team: true } } });
    expect(reads.uses('object')).to.equal(true);
    expect(reads.uses('oldObject')).to.equal(false);
    expect(reads.of('oldObject')).to.equal(undefined);
  });

  it('takes a constant string index as a field, and anything else as reading the whole value', function () {
    expect(plain(readsOf('object.metadata["labels"].team == "a"').of('object'))).to.deep.equal({ metadata: { labels: { team: true } } });
    expect(plain(readsOf('object.spec.containers[0].name == "a"').of('object'))).to.deep.equal({ spec: { containers: true } });
    expect(plain(readsOf('object.metadata.labels[object.kind] == "x"').of('object'))).to.deep.equal({ metadata: { labels: true }, kind: true });
    expect(plain(readsOf('object.?spec.replicas.orValue(0) > 1').of('object'))).to.deep.equal({ spec: { replicas: true } });
  });

  it('follows a comprehension into the elements through its variable, and size() reads nothing below', function () {
    const reads = readsOf(
      'object.spec.containers.all(c, c.image.startsWith("r/") && c.ports.all(p, p.containerPort > 0))',
      'object.spec.containers.exists(i, c, has(c.securityContext.runAsNonRoot))',
      'object.spec.containers.size() <= 64',
      'size(object.spec.volumes) < 3',
      'object.metadata.labels.all(k, v, v.size() < 64)',
      'object.metadata.annotations.all(k, k != "")',
    );
    expect(plain(reads.of('object'))).to.deep.equal({
      spec: {
        containers: { '[*]': { image: true, ports: { '[*]': { containerPort: true } }, securityContext: { runAsNonRoot: true } } },
        volumes: {},
      },
      // (a one-variable comprehension over a map binds its keys; not knowing list from map, the values are converted too)
      metadata: { labels: { '[*]': {} }, annotations: { '[*]': true } },
    });
  });

  it('reads elements whole where the comprehension hands them on or its variable is bound again', function () {
    expect(plain(readsOf('object.spec.containers.filter(c, c.name == "a").size() == 1').of('object'))).to.deep.equal({ spec: { containers: true } });
    expect(plain(readsOf('object.spec.containers.map(c, c.ports).size() > 0').of('object'))).to.deep.equal({ spec: { containers: { '[*]': { ports: true } } } });
    expect(plain(readsOf('object.spec.containers.all(c, [1].all(c, c > 0))').of('object'))).to.deep.equal({ spec: { containers: true } });
    expect(plain(readsOf('object.spec.containers.all(c, [1].exists(c, c > 0))').of('object'))).to.deep.equal({ spec: { containers: true } });
  });

  it('reads the whole object when it is used other than by selecting a field', function () {
    expect(readsOf('object == oldObject').of('object')).to.equal(true);
    expect(readsOf('[object].all(o, o.spec.replicas > 1)').of('object')).to.equal(true);
    expect(plain(readsOf('[object.spec].all(s, s.replicas > 1)').of('object'))).to.deep.equal({ spec: true });
    expect(plain(readsOf('object.spec.replicas > 1', 'object.spec == oldObject.spec').of('object'))).to.deep.equal({ spec: true });
  });

  it('converts what is read so ints stay ints, and leaves the rest as JSON', function () {
    const expressions = [
      'type(object.spec.replicas) == int && object.spec.replicas / 2 == 1',
      'object.spec.template.spec.containers.all(c, c.ports.all(p, type(p.containerPort) == int))',
      '[object.spec.strategy].all(s, type(s.rollingUpdate.maxSurge) == int)',
      'has(object.status.readyReplicas)',
      'object.spec.template.spec.containers.map(c, c.ports.map(p, p.containerPort)) == [[80]]',
      'object.metadata.labels.all(k, v, type(v) == int)',
    ];
    const reads = readsOf(...expressions);
    const object = {
      metadata: { labels: { a: 1 } },
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
