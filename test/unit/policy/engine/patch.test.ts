/** Copy-on-write JSON patches: the result is the patched document, the original never changes, and untouched parts are shared. */
import { expect } from 'chai';
import jsonpatch from 'fast-json-patch';
import { CopyOnWritePatcher } from '../../../../src/policy/engine/patch.ts';
import type { JsonPatchOperation } from '../../../../src/api/types.ts';

const pod = () => ({
  metadata: { name: 'p', labels: { 'app.kubernetes.io/name': 'web' } },
  spec: {
    containers: [
      { name: 'a', image: 'x' },
      { name: 'b', image: 'y' },
    ],
    volumes: [{ name: 'v' }],
  },
});

describe('policy: copy-on-write patches', function () {
  const cases: [string, JsonPatchOperation[]][] = [
    ['replace deep', [{ op: 'replace', path: '/spec/containers/1/image', value: 'z' }]],
    ['add to an escaped key', [{ op: 'add', path: '/metadata/labels/team~1tier', value: 'gold' }]],
    [
      'remove and append',
      [
        { op: 'remove', path: '/spec/volumes/0' },
        { op: 'add', path: '/spec/containers/-', value: { name: 'c' } },
      ],
    ],
    [
      'move and copy',
      [
        { op: 'move', from: '/spec/volumes', path: '/spec/oldVolumes' },
        { op: 'copy', from: '/metadata/labels', path: '/metadata/annotations' },
      ],
    ],
    [
      'test then replace the root part',
      [
        { op: 'test', path: '/metadata/name', value: 'p' },
        { op: 'replace', path: '/metadata', value: { name: 'q' } },
      ],
    ],
    [
      'an add, then a change inside what was added',
      [
        { op: 'add', path: '/status', value: {} },
        { op: 'add', path: '/status/phase', value: 'Pending' },
      ],
    ],
  ];
  for (const [name, ops] of cases) {
    it(`${name}: the same result as applying to a deep copy, the original untouched`, function () {
      const original = pod();
      const frozen = structuredClone(original);
      const result = new CopyOnWritePatcher().apply(original, structuredClone(ops));
      expect(result).to.deep.equal(jsonpatch.applyPatch(pod(), structuredClone(ops) as jsonpatch.Operation[], true, false).newDocument);
      expect(original).to.deep.equal(frozen);
    });
  }

  it('shares what no operation touches, so the diff walks only the changed path', function () {
    const original = pod();
    const result = new CopyOnWritePatcher().apply(original, [{ op: 'replace', path: '/spec/containers/1/image', value: 'z' }]);
    expect(result.metadata).to.equal(original.metadata);
    expect(result.spec.containers[0]).to.equal(original.spec.containers[0]);
    expect(result.spec.containers[1]).to.not.equal(original.spec.containers[1]);
    expect(jsonpatch.compare(original, result)).to.deep.equal([{ op: 'replace', path: '/spec/containers/1/image', value: 'z' }]);
  });

  it('refuses an operation on a missing path without touching the original', function () {
    const original = pod();
    expect(() => new CopyOnWritePatcher().apply(original, [{ op: 'replace', path: '/metadata/annotations/x', value: 'y' }])).to.throw();
    expect(original).to.deep.equal(pod());
  });
});
