/**
 * DefaultResources, with the cases of upstream LimitRanger's tests: TestDefaultContainerResourceRequirements,
 * TestMergePodResourceRequirements, TestPodLimitFunc, TestPodLimitFuncApplyDefault,
 * TestLimitRangerIgnoresSubresource, TestLimitRangerAdmitPod and TestPersistentVolumeClaimLimitFunc.
 * Each Pod goes through the mutating side, then its result through the validating side, as the
 * API server would send it.
 */
import { expect } from 'chai';
import { containerDefaults, defaultResources, LIMIT_RANGER_ANNOTATION, type LimitRangeItem } from '../../../src/handlers/default-resources.ts';
import type { Decision } from '../../../src/api/admission-review.ts';
import { requestFor } from '../../fixtures/reviews.ts';
import { compare, formatQuantity, parseQuantity, ratioString } from '../../../src/kubernetes/quantity.ts';
import { applied, suiteErrors } from '../../fixtures/patch.ts';
import { viewOf } from '../../fixtures/views.ts';

type List = Record<string, string>;
type Requirements = { requests?: List; limits?: List };

const compute = (cpu: string, memory: string): List => ({ ...(cpu ? { cpu } : {}), ...(memory ? { memory } : {}) });
const storage = (value: string): List => (value ? { 'ephemeral-storage': value } : {});
const claimStorage = (value: string): List => (value ? { storage: value } : {});
const req = (requests: List, limits: List): Requirements => ({ requests, limits });
const NONE: List = {};

function limitRange(items: LimitRangeItem[], name = 'abc', namespace = 'test') {
  return { apiVersion: 'v1', kind: 'LimitRange', metadata: { name, namespace }, spec: { limits: items } };
}
function createLimitRange(type: string, min: List, max: List, defaultLimit: List = NONE, defaultRequest: List = NONE, maxLimitRequestRatio: List = NONE) {
  return limitRange([{ type, min, max, default: defaultLimit, defaultRequest, maxLimitRequestRatio }]);
}
const validLimitRange = () =>
  limitRange([
    { type: 'Pod', max: compute('200m', '4Gi'), min: compute('50m', '2Mi') },
    { type: 'Container', max: compute('100m', '2Gi'), min: compute('25m', '1Mi'), default: compute('75m', '10Mi'), defaultRequest: compute('50m', '5Mi') },
  ]);
const validLimitRangeNoDefaults = () =>
  limitRange([
    { type: 'Pod', max: compute('200m', '4Gi'), min: compute('50m', '2Mi') },
    { type: 'Container', max: compute('100m', '2Gi'), min: compute('25m', '1Mi') },
  ]);

interface Pod {
  metadata: { name: string; namespace: string; annotations?: Record<string, string> };
  spec: { containers: { name: string; image: string; resources: Requirements; restartPolicy?: string }[]; initContainers?: { name: string; image: string; resources: Requirements; restartPolicy?: string }[] };
}
function validPod(name: string, numContainers: number, resources: Requirements): Pod {
  const containers = Array.from({ length: numContainers }, (_, i) => ({ name: `foo-${i}`, image: `foo:V${i}`, resources: structuredClone(resources) }));
  return { metadata: { name, namespace: 'test' }, spec: { containers } };
}
function validPodInit(pod: Pod, ...resources: Requirements[]): Pod {
  pod.spec.initContainers = [...(pod.spec.initContainers ?? []), ...resources.map((r, i) => ({ name: `foo-${i}`, image: `foo:V${i}`, resources: structuredClone(r) }))];
  return pod;
}
function withRestartableInitContainer(requests: List, limits: List, pod: Pod): Pod {
  const n = pod.spec.initContainers?.length ?? 0;
  pod.spec.initContainers = [...(pod.spec.initContainers ?? []), { name: `foo-${n}`, image: `foo:V${n}`, restartPolicy: 'Always', resources: { requests, limits } }];
  return pod;
}

const NO_CONFIG = defaultResources.parseConfig({}).config;

/** Mutating side, then (when admitted) the validating side on the result. */
function admit(pod: Pod, ranges: ReturnType<typeof limitRange>[], config = NO_CONFIG): { mutated: Decision; stored: Pod; validated: Decision } {
  const view = viewOf({ limitRanges: ranges });
  const mutated = defaultResources.mutate!(requestFor('pods', 'CREATE', { object: pod as never }), config, view);
  const stored = applied(pod, mutated);
  const validated = defaultResources.validate!(requestFor('pods', 'CREATE', { object: stored as never }), config, view);
  return { mutated, stored, validated };
}

describe('handlers: DefaultResources', function () {
  it('compares quantities exactly, as resource.Quantity does', function () {
    const q = (text: string) => parseQuantity(text)!;
    const equal: [string, string][] = [
      ['1.5Gi', '1536Mi'],
      ['1e3', '1k'],
      ['0.5', '500m'],
      ['1E', '1000P'],
      ['100m', '.1'],
      ['+2', '2000m'],
      ['1Ki', '1024'],
    ];
    for (const [a, b] of equal) expect(compare(q(a), q(b)), `${a} = ${b}`).to.equal(0);
    expect(compare(q('999m'), q('1'))).to.equal(-1);
    expect(compare(q('1Gi'), q('1G'))).to.equal(1);
    for (const bad of ['', 'lots', '1.2.3', '1e', '1Kb', 'm', '--1']) expect(parseQuantity(bad), bad).to.equal(undefined);
    expect([q('1536Mi'), q('2500m'), q('3'), q('2k'), q('0.5n')].map(formatQuantity)).to.deep.equal(['1536Mi', '2500m', '3', '2k', '1n']);
    expect(ratioString(q('2500m'), q('1250m'))).to.equal('2.000000');
    expect(ratioString(q('1'), q('3'))).to.equal('0.333333');
  });

  it('TestDefaultContainerResourceRequirements: the defaults of the Container items', function () {
    expect(containerDefaults(validLimitRange().spec.limits)).to.deep.equal({ requests: compute('50m', '5Mi'), limits: compute('75m', '10Mi') });
  });

  describe('TestMergePodResourceRequirements', function () {
    it('a pod with no resources enumerated gets each resource from the defaults, and the annotation says so', function () {
      const { stored } = admit(validPod('empty-resources', 1, req(NONE, NONE)), [validLimitRange()]);
      expect(stored.spec.containers[0]!.resources).to.deep.equal({ requests: compute('50m', '5Mi'), limits: compute('75m', '10Mi') });
      expect(stored.metadata.annotations?.[LIMIT_RANGER_ANNOTATION]).to.equal('LimitRanger plugin set: cpu, memory request for container foo-0; cpu, memory limit for container foo-0');
    });

    it('a pod with some resources enumerated only gets the missing ones (containers and init containers)', function () {
      const input = req(compute('', '512Mi'), NONE);
      const { stored } = admit(validPodInit(validPod('limit-memory', 1, input), input), [validLimitRange()]);
      const expected = { requests: compute('50m', '512Mi'), limits: compute('75m', '10Mi') };
      expect(stored.spec.containers[0]!.resources).to.deep.equal(expected);
      expect(stored.spec.initContainers![0]!.resources).to.deep.equal(expected);
      // Upstream's test shares one Go map between the two containers, so only the first shows in its annotation.
      expect(stored.metadata.annotations?.[LIMIT_RANGER_ANNOTATION]).to.equal(
        'LimitRanger plugin set: cpu request for container foo-0; cpu, memory limit for container foo-0; cpu request for init container foo-0; cpu, memory limit for init container foo-0',
      );
    });

    it('a pod with all resources enumerated is not changed or annotated', function () {
      const input = req(compute('100m', '512Mi'), compute('200m', '1G'));
      const init = req(compute('200m', '1G'), compute('400m', '2G'));
      const { mutated } = admit(validPodInit(validPod('limit-memory', 1, input), init), [validLimitRange()]);
      expect(mutated).to.deep.equal({ allowed: true });
    });
  });

  describe('TestPodLimitFunc', function () {
    const lr = createLimitRange;
    const successCases: [Pod, ReturnType<typeof limitRange>][] = [
      [validPod('ctr-min-cpu-request', 1, req(compute('100m', ''), NONE)), lr('Container', compute('50m', ''), NONE)],
      [validPod('ctr-min-cpu-request-limit', 1, req(compute('100m', ''), compute('200m', ''))), lr('Container', compute('50m', ''), NONE)],
      [validPod('ctr-min-memory-request', 1, req(compute('', '60Mi'), NONE)), lr('Container', compute('', '50Mi'), NONE)],
      [validPod('ctr-min-memory-request-limit', 1, req(compute('', '60Mi'), compute('', '100Mi'))), lr('Container', compute('', '50Mi'), NONE)],
      [validPod('ctr-max-cpu-request-limit', 1, req(compute('500m', ''), compute('1', ''))), lr('Container', NONE, compute('2', ''))],
      [validPod('ctr-max-cpu-limit', 1, req(NONE, compute('1', ''))), lr('Container', NONE, compute('2', ''))],
      [validPod('ctr-max-mem-request-limit', 1, req(compute('', '250Mi'), compute('', '500Mi'))), lr('Container', NONE, compute('', '1Gi'))],
      [validPod('ctr-max-cpu-ratio', 1, req(compute('500m', ''), compute('750m', ''))), lr('Container', NONE, NONE, NONE, NONE, compute('1.5', ''))],
      [validPod('ctr-max-mem-limit', 1, req(NONE, compute('', '500Mi'))), lr('Container', NONE, compute('', '1Gi'))],
      [validPod('pod-min-cpu-request', 2, req(compute('75m', ''), NONE)), lr('Pod', compute('100m', ''), NONE)],
      [validPod('pod-min-cpu-request-limit', 2, req(compute('75m', ''), compute('200m', ''))), lr('Pod', compute('100m', ''), NONE)],
      [validPod('pod-min-memory-request', 2, req(compute('', '60Mi'), NONE)), lr('Pod', compute('', '100Mi'), NONE)],
      [validPod('pod-min-memory-request-limit', 2, req(compute('', '60Mi'), compute('', '100Mi'))), lr('Pod', compute('', '100Mi'), NONE)],
      [validPodInit(validPod('pod-init-min-memory-request', 2, req(compute('', '60Mi'), NONE)), req(compute('', '100Mi'), NONE)), lr('Pod', compute('', '100Mi'), NONE)],
      [validPodInit(validPod('pod-init-min-memory-request-limit', 2, req(compute('', '60Mi'), compute('', '100Mi'))), req(compute('', '80Mi'), compute('', '100Mi'))), lr('Pod', compute('', '100Mi'), NONE)],
      [validPod('pod-max-cpu-request-limit', 2, req(compute('500m', ''), compute('1', ''))), lr('Pod', NONE, compute('2', ''))],
      [validPod('pod-max-cpu-limit', 2, req(NONE, compute('1', ''))), lr('Pod', NONE, compute('2', ''))],
      [validPodInit(validPod('pod-init-max-cpu-request-limit', 2, req(compute('500m', ''), compute('1', ''))), req(compute('1', ''), compute('2', '')), req(compute('1', ''), compute('1', ''))), lr('Pod', NONE, compute('2', ''))],
      [validPodInit(validPod('pod-init-max-cpu-limit', 2, req(NONE, compute('1', ''))), req(NONE, compute('2', '')), req(NONE, compute('2', ''))), lr('Pod', NONE, compute('2', ''))],
      [validPod('pod-max-mem-request-limit', 2, req(compute('', '250Mi'), compute('', '500Mi'))), lr('Pod', NONE, compute('', '1Gi'))],
      [validPod('pod-max-mem-limit', 2, req(NONE, compute('', '500Mi'))), lr('Pod', NONE, compute('', '1Gi'))],
      [validPod('pod-max-mem-ratio', 3, req(compute('', '300Mi'), compute('', '450Mi'))), lr('Pod', NONE, compute('', '2Gi'), NONE, NONE, compute('', '1.5'))],
      [validPod('ctr-1-min-local-ephemeral-storage-request', 1, req(storage('60Mi'), NONE)), lr('Container', storage('50Mi'), NONE)],
      [validPod('ctr-1-min-local-ephemeral-storage-request-limit', 1, req(storage('60Mi'), storage('100Mi'))), lr('Container', storage('50Mi'), NONE)],
      [validPod('ctr-1-max-local-ephemeral-storage-request-limit', 1, req(storage('250Mi'), storage('500Mi'))), lr('Container', NONE, storage('1Gi'))],
      [validPod('ctr-1-max-local-ephemeral-storage-limit', 1, req(NONE, storage('500Mi'))), lr('Container', NONE, storage('1Gi'))],
      [validPod('ctr-2-min-local-ephemeral-storage-request', 2, req(storage('60Mi'), NONE)), lr('Container', storage('50Mi'), NONE)],
      [validPod('ctr-2-min-local-ephemeral-storage-request-limit', 2, req(storage('60Mi'), storage('100Mi'))), lr('Container', storage('50Mi'), NONE)],
      [validPod('ctr-2-max-local-ephemeral-storage-request-limit', 2, req(storage('250Mi'), storage('500Mi'))), lr('Container', NONE, storage('600Mi'))],
      [validPod('ctr-2-max-local-ephemeral-storage-limit', 2, req(NONE, storage('500Mi'))), lr('Container', NONE, storage('600Mi'))],
      [validPod('pod-min-local-ephemeral-storage-request', 2, req(storage('60Mi'), NONE)), lr('Pod', storage('100Mi'), NONE)],
      [validPod('pod-min-local-ephemeral-storage-request-limit', 2, req(storage('60Mi'), storage('100Mi'))), lr('Pod', storage('100Mi'), NONE)],
      [validPodInit(validPod('pod-init-min-local-ephemeral-storage-request', 2, req(storage('60Mi'), NONE)), req(storage('100Mi'), NONE)), lr('Pod', storage('100Mi'), NONE)],
      [validPodInit(validPod('pod-init-min-local-ephemeral-storage-request-limit', 2, req(storage('60Mi'), storage('100Mi'))), req(storage('80Mi'), storage('100Mi'))), lr('Pod', storage('100Mi'), NONE)],
      [validPod('pod-max-local-ephemeral-storage-request-limit', 2, req(storage('250Mi'), storage('500Mi'))), lr('Pod', NONE, storage('1Gi'))],
      [validPod('pod-max-local-ephemeral-storage-limit', 2, req(NONE, storage('500Mi'))), lr('Pod', NONE, storage('1Gi'))],
      [validPod('pod-max-local-ephemeral-storage-ratio', 3, req(storage('300Mi'), storage('450Mi'))), lr('Pod', NONE, storage('2Gi'), NONE, NONE, storage('1.5'))],
    ];
    for (const [pod, range] of successCases) {
      it(`admits ${pod.metadata.name}`, function () {
        const { validated } = admit(pod, [range]);
        expect(validated, validated.message).to.deep.equal({ allowed: true });
      });
    }

    const errorCases: [Pod, ReturnType<typeof limitRange>, string][] = [
      [validPod('ctr-min-cpu-request', 1, req(compute('40m', ''), NONE)), lr('Container', compute('50m', ''), NONE), 'minimum cpu usage per Container is 50m, but request is 40m'],
      [validPod('ctr-min-cpu-request-limit', 1, req(compute('40m', ''), compute('200m', ''))), lr('Container', compute('50m', ''), NONE), 'but request is 40m'],
      [validPod('ctr-min-cpu-no-request-limit', 1, req(NONE, NONE)), lr('Container', compute('50m', ''), NONE), 'minimum cpu usage per Container is 50m.  No request is specified'],
      [validPod('ctr-min-memory-request', 1, req(compute('', '40Mi'), NONE)), lr('Container', compute('', '50Mi'), NONE), 'minimum memory usage per Container is 50Mi, but request is 40Mi'],
      [validPod('ctr-min-memory-request-limit', 1, req(compute('', '40Mi'), compute('', '100Mi'))), lr('Container', compute('', '50Mi'), NONE), 'but request is 40Mi'],
      [validPod('ctr-min-memory-no-request-limit', 1, req(NONE, NONE)), lr('Container', compute('', '50Mi'), NONE), 'No request is specified'],
      [validPod('ctr-max-cpu-request-limit', 1, req(compute('500m', ''), compute('2500m', ''))), lr('Container', NONE, compute('2', '')), 'maximum cpu usage per Container is 2, but limit is 2500m'],
      [validPod('ctr-max-cpu-limit', 1, req(NONE, compute('2500m', ''))), lr('Container', NONE, compute('2', '')), 'but limit is 2500m'],
      [validPod('ctr-max-cpu-no-request-limit', 1, req(NONE, NONE)), lr('Container', NONE, compute('2', '')), 'maximum cpu usage per Container is 2.  No limit is specified'],
      [validPod('ctr-max-cpu-ratio', 1, req(compute('1250m', ''), compute('2500m', ''))), lr('Container', NONE, NONE, NONE, NONE, compute('1', '')), 'cpu max limit to request ratio per Container is 1, but provided ratio is 2.000000'],
      [validPod('ctr-max-mem-request-limit', 1, req(compute('', '250Mi'), compute('', '2Gi'))), lr('Container', NONE, compute('', '1Gi')), 'maximum memory usage per Container is 1Gi, but limit is 2Gi'],
      [validPod('ctr-max-mem-limit', 1, req(NONE, compute('', '2Gi'))), lr('Container', NONE, compute('', '1Gi')), 'but limit is 2Gi'],
      [validPod('ctr-max-mem-no-request-limit', 1, req(NONE, NONE)), lr('Container', NONE, compute('', '1Gi')), 'No limit is specified'],
      [validPod('pod-min-cpu-request', 1, req(compute('75m', ''), NONE)), lr('Pod', compute('100m', ''), NONE), 'minimum cpu usage per Pod is 100m, but request is 75m'],
      [validPod('pod-min-cpu-request-limit', 1, req(compute('75m', ''), compute('200m', ''))), lr('Pod', compute('100m', ''), NONE), 'but request is 75m'],
      [validPod('pod-min-memory-request', 1, req(compute('', '60Mi'), NONE)), lr('Pod', compute('', '100Mi'), NONE), 'but request is 60Mi'],
      [validPod('pod-min-memory-request-limit', 1, req(compute('', '60Mi'), compute('', '100Mi'))), lr('Pod', compute('', '100Mi'), NONE), 'but request is 60Mi'],
      [validPod('pod-max-cpu-request-limit', 3, req(compute('500m', ''), compute('1', ''))), lr('Pod', NONE, compute('2', '')), 'maximum cpu usage per Pod is 2, but limit is 3'],
      [validPod('pod-max-cpu-limit', 3, req(NONE, compute('1', ''))), lr('Pod', NONE, compute('2', '')), 'but limit is 3'],
      [validPod('pod-max-mem-request-limit', 3, req(compute('', '250Mi'), compute('', '500Mi'))), lr('Pod', NONE, compute('', '1Gi')), 'maximum memory usage per Pod is 1Gi, but limit is 1500Mi'],
      [validPod('pod-max-mem-limit', 3, req(NONE, compute('', '500Mi'))), lr('Pod', NONE, compute('', '1Gi')), 'but limit is 1500Mi'],
      [validPodInit(validPod('pod-init-max-mem-limit', 1, req(NONE, compute('', '500Mi'))), req(NONE, compute('', '1.5Gi'))), lr('Pod', NONE, compute('', '1Gi')), 'but limit is 1536Mi'],
      [
        validPod('pod-max-mem-ratio', 3, req(compute('', '250Mi'), compute('', '500Mi'))),
        lr('Pod', NONE, compute('', '2Gi'), NONE, NONE, compute('', '1.5')),
        'memory max limit to request ratio per Pod is 1.5, but provided ratio is 2.000000',
      ],
      [validPod('ctr-1-min-local-ephemeral-storage-request', 1, req(storage('40Mi'), NONE)), lr('Container', storage('50Mi'), NONE), 'minimum ephemeral-storage usage per Container is 50Mi, but request is 40Mi'],
      [validPod('ctr-1-min-local-ephemeral-storage-request-limit', 1, req(storage('40Mi'), storage('100Mi'))), lr('Container', storage('50Mi'), NONE), 'but request is 40Mi'],
      [validPod('ctr-1-min-local-ephemeral-storage-no-request-limit', 1, req(NONE, NONE)), lr('Container', storage('50Mi'), NONE), 'No request is specified'],
      [validPod('ctr-1-max-local-ephemeral-storage-request-limit', 1, req(storage('250Mi'), storage('2Gi'))), lr('Container', NONE, storage('1Gi')), 'but limit is 2Gi'],
      [validPod('ctr-1-max-local-ephemeral-storage-limit', 1, req(NONE, storage('2Gi'))), lr('Container', NONE, storage('1Gi')), 'but limit is 2Gi'],
      [validPod('ctr-1-max-local-ephemeral-storage-no-request-limit', 1, req(NONE, NONE)), lr('Container', NONE, storage('1Gi')), 'No limit is specified'],
      [validPod('ctr-2-min-local-ephemeral-storage-request', 2, req(storage('40Mi'), NONE)), lr('Container', storage('50Mi'), NONE), 'minimum ephemeral-storage usage per Container is 50Mi, but request is 40Mi'],
      [validPod('ctr-2-min-local-ephemeral-storage-request-limit', 2, req(storage('40Mi'), storage('100Mi'))), lr('Container', storage('50Mi'), NONE), 'but request is 40Mi'],
      [validPod('ctr-2-min-local-ephemeral-storage-no-request-limit', 2, req(NONE, NONE)), lr('Container', storage('50Mi'), NONE), 'No request is specified'],
      [validPod('ctr-2-max-local-ephemeral-storage-request-limit', 2, req(storage('250Mi'), storage('2Gi'))), lr('Container', NONE, storage('1Gi')), 'but limit is 2Gi'],
      [validPod('ctr-2-max-local-ephemeral-storage-limit', 2, req(NONE, storage('2Gi'))), lr('Container', NONE, storage('1Gi')), 'but limit is 2Gi'],
      [validPod('ctr-2-max-local-ephemeral-storage-no-request-limit', 2, req(NONE, NONE)), lr('Container', NONE, storage('1Gi')), 'No limit is specified'],
      [validPod('pod-min-local-ephemeral-storage-request', 1, req(storage('60Mi'), NONE)), lr('Pod', storage('100Mi'), NONE), 'but request is 60Mi'],
      [validPod('pod-min-local-ephemeral-storage-request-limit', 1, req(storage('60Mi'), storage('100Mi'))), lr('Pod', storage('100Mi'), NONE), 'but request is 60Mi'],
      [validPod('pod-max-local-ephemeral-storage-request-limit', 3, req(storage('250Mi'), storage('500Mi'))), lr('Pod', NONE, storage('1Gi')), 'but limit is 1500Mi'],
      [validPod('pod-max-local-ephemeral-storage-limit', 3, req(NONE, storage('500Mi'))), lr('Pod', NONE, storage('1Gi')), 'but limit is 1500Mi'],
      [validPodInit(validPod('pod-init-max-local-ephemeral-storage-limit', 1, req(NONE, storage('500Mi'))), req(NONE, storage('1.5Gi'))), lr('Pod', NONE, storage('1Gi')), 'but limit is 1536Mi'],
      [validPod('pod-max-local-ephemeral-storage-ratio', 3, req(storage('250Mi'), storage('500Mi'))), lr('Pod', NONE, storage('2Gi'), NONE, NONE, storage('1.5')), 'provided ratio is 2.000000'],
      [
        withRestartableInitContainer(compute('1500m', ''), NONE, validPod('ctr-max-cpu-limit-restartable-init-container', 1, req(compute('1000m', ''), compute('1500m', '')))),
        lr('Pod', NONE, compute('2', '')),
        'maximum cpu usage per Pod is 2, but request is 2500m',
      ],
    ];
    for (const [pod, range, message] of errorCases) {
      it(`denies ${pod.metadata.name}`, function () {
        const { mutated, validated } = admit(pod, [range]);
        expect(mutated.allowed).to.equal(true);
        expect(validated).to.include({ allowed: false, code: 403, reason: 'Forbidden' });
        expect(validated.message).to.match(new RegExp(`^pods "${pod.metadata.name}" is forbidden: `));
        expect(validated.message).to.contain(message);
      });
    }
  });

  it('TestPodLimitFuncApplyDefault: containers and init containers get the default requests and limits', function () {
    const { stored, validated } = admit(validPodInit(validPod('foo', 1, req(NONE, NONE)), req(NONE, NONE)), [validLimitRange()]);
    for (const container of [...stored.spec.containers, ...stored.spec.initContainers!]) {
      expect(container.resources).to.deep.equal({ requests: compute('50m', '5Mi'), limits: compute('75m', '10Mi') });
    }
    // the Pod's effective cpu request is 50m (the container's; the init container's is no larger): the Pod min, so admitted
    expect(validated, validated.message).to.deep.equal({ allowed: true });
  });

  it('TestLimitRangerAdmitPod / IgnoresSubresource: CREATE denied, UPDATE, subresources and terminating Pods not checked', function () {
    const view = viewOf({ limitRanges: [validLimitRangeNoDefaults()] });
    const pod = validPod('testPod', 1, {}) as never;
    expect(defaultResources.mutate!(requestFor('pods', 'CREATE', { object: pod }), NO_CONFIG, view)).to.deep.equal({ allowed: true });
    const created = defaultResources.validate!(requestFor('pods', 'CREATE', { object: pod }), NO_CONFIG, view);
    expect(created.allowed).to.equal(false);
    expect(created.message).to.contain('No request is specified').and.to.contain('No limit is specified');
    expect(defaultResources.validate!(requestFor('pods', 'UPDATE', { object: pod, oldObject: pod }), NO_CONFIG, view)).to.deep.equal({ allowed: true });
    expect(defaultResources.validate!(requestFor('pods', 'UPDATE', { object: pod, oldObject: pod, subResource: 'status' }), NO_CONFIG, view)).to.deep.equal({ allowed: true });
    const terminating = { ...(pod as object), metadata: { name: 'terminatingPod', namespace: 'test', deletionTimestamp: '2025-01-01T00:00:00Z' } } as never;
    expect(defaultResources.validate!(requestFor('pods', 'UPDATE', { object: terminating, oldObject: terminating, subResource: 'resize' }), NO_CONFIG, view)).to.deep.equal({ allowed: true });
    expect(defaultResources.validate!(requestFor('pods', 'DELETE', { name: 'testPod', namespace: 'test' }), NO_CONFIG, view)).to.deep.equal({ allowed: true });
  });

  it('pods/resize: a request and limit that did not change are not checked again; a changed one is', function () {
    const view = viewOf({ limitRanges: [createLimitRange('Container', NONE, compute('1', ''))] });
    const old = validPod('resized', 1, req(compute('2', ''), compute('2', ''))) as never; // predates the LimitRange
    const same = validPod('resized', 1, req(compute('2', ''), compute('2', ''))) as never;
    const grown = validPod('resized', 1, req(compute('3', ''), compute('3', ''))) as never;
    expect(defaultResources.validate!(requestFor('pods', 'UPDATE', { object: same, oldObject: old, subResource: 'resize' }), NO_CONFIG, view)).to.deep.equal({ allowed: true });
    expect(defaultResources.validate!(requestFor('pods', 'UPDATE', { object: grown, oldObject: old, subResource: 'resize' }), NO_CONFIG, view).message).to.contain('but limit is 3');
  });

  describe('TestPersistentVolumeClaimLimitFunc', function () {
    const claim = (name: string, requests: List) => ({ apiVersion: 'v1', kind: 'PersistentVolumeClaim', metadata: { name, namespace: 'test' }, spec: { resources: { requests } } });
    const check = (pvc: ReturnType<typeof claim>, range: ReturnType<typeof limitRange>, old?: ReturnType<typeof claim>) =>
      defaultResources.validate!(requestFor('persistentvolumeclaims', old ? 'UPDATE' : 'CREATE', { object: pvc, oldObject: old ?? null }), NO_CONFIG, viewOf({ limitRanges: [range] }));
    const lr = (min: List, max: List) => createLimitRange('PersistentVolumeClaim', min, max);
    const success: [ReturnType<typeof claim>, ReturnType<typeof limitRange>][] = [
      [claim('pvc-is-min-storage-request', claimStorage('1Gi')), lr(claimStorage('1Gi'), NONE)],
      [claim('pvc-is-max-storage-request', claimStorage('1Gi')), lr(NONE, claimStorage('1Gi'))],
      [claim('pvc-no-minmax-storage-request', claimStorage('100Gi')), lr(NONE, NONE)],
      [claim('pvc-within-minmax-storage-request', claimStorage('5Gi')), lr(claimStorage('1Gi'), claimStorage('10Gi'))],
    ];
    for (const [pvc, range] of success) it(`admits ${pvc.metadata.name}`, () => expect(check(pvc, range)).to.deep.equal({ allowed: true }));
    const errors: [ReturnType<typeof claim>, ReturnType<typeof limitRange>, string][] = [
      [claim('pvc-below-min-storage-request', claimStorage('500Mi')), lr(claimStorage('1Gi'), NONE), 'minimum storage usage per PersistentVolumeClaim is 1Gi, but request is 500Mi'],
      [claim('pvc-exceeds-max-storage-request', claimStorage('100Gi')), lr(claimStorage('1Gi'), claimStorage('1Gi')), 'maximum storage usage per PersistentVolumeClaim is 1Gi, but request is 100Gi'],
    ];
    for (const [pvc, range, message] of errors) it(`denies ${pvc.metadata.name}`, () => expect(check(pvc, range).message).to.contain(message));
    it('an UPDATE that keeps a stored request is not checked again; one that grows it is', function () {
      const range = lr(NONE, claimStorage('10Gi'));
      expect(check(claim('old', claimStorage('20Gi')), range, claim('old', claimStorage('20Gi')))).to.deep.equal({ allowed: true });
      expect(check(claim('old', claimStorage('30Gi')), range, claim('old', claimStorage('20Gi'))).allowed).to.equal(false);
    });
  });

  it('applies the LimitRanges in name order: the first to default a resource wins', function () {
    const first = limitRange([{ type: 'Container', default: compute('300m', ''), defaultRequest: compute('100m', '') }], 'a-first');
    const second = limitRange([{ type: 'Container', default: compute('900m', '64Mi'), defaultRequest: compute('900m', '64Mi') }], 'b-second');
    const { stored } = admit(validPod('p', 1, req(NONE, NONE)), [second, first]);
    expect(stored.spec.containers[0]!.resources).to.deep.equal({ requests: compute('100m', '64Mi'), limits: compute('300m', '64Mi') });
  });

  it("uses the config's limits only in namespaces without a LimitRange, defaulted as the API server defaults a LimitRange", function () {
    const parsed = defaultResources.parseConfig({ limits: [{ type: 'Container', max: { cpu: '1', memory: '1Gi' }, defaultRequest: { memory: '128Mi' } }] });
    expect(parsed.errors).to.deep.equal([]);
    // default <- max; defaultRequest <- default where unset
    const { stored, validated } = admit(validPod('p', 1, req(NONE, NONE)), [], parsed.config);
    expect(stored.spec.containers[0]!.resources).to.deep.equal({ requests: compute('1', '128Mi'), limits: compute('1', '1Gi') });
    expect(validated).to.deep.equal({ allowed: true });
    const over = admit(validPod('big', 1, req(compute('2', ''), compute('2', ''))), [], parsed.config).validated;
    expect(over.message).to.equal('pods "big" is forbidden: maximum cpu usage per Container is 1, but limit is 2');
    // a namespace with its own LimitRange ignores the config
    expect(admit(validPod('big', 1, req(compute('2', ''), compute('2', ''))), [createLimitRange('Container', NONE, compute('4', ''))], parsed.config).validated).to.deep.equal({ allowed: true });
  });

  it('answers with a minimal patch, leaves ephemeral containers alone, and adds to existing annotations', function () {
    const pod = {
      metadata: { name: 'p', namespace: 'test', annotations: { a: 'b' } },
      spec: {
        containers: [{ name: 'app', image: 'x', resources: { requests: { memory: '1Mi' } } }],
        ephemeralContainers: [{ name: 'debug', image: 'busybox' }],
      },
    };
    const view = viewOf({ limitRanges: [validLimitRange()] });
    const decision = defaultResources.mutate!(requestFor('pods', 'CREATE', { object: pod }), NO_CONFIG, view);
    expect(decision.patch).to.deep.equal([
      { op: 'add', path: '/spec/containers/0/resources/requests/cpu', value: '50m' },
      { op: 'add', path: '/spec/containers/0/resources/limits', value: compute('75m', '10Mi') },
      { op: 'add', path: '/metadata/annotations/kubernetes.io~1limit-ranger', value: 'LimitRanger plugin set: cpu request for container app; cpu, memory limit for container app' },
    ]);
  });

  it('a namespace without LimitRanges and no config limits changes nothing', function () {
    expect(admit(validPod('p', 1, req(NONE, NONE)), []).mutated).to.deep.equal({ allowed: true });
    expect(admit(validPod('p', 1, req(NONE, NONE)), []).validated).to.deep.equal({ allowed: true });
  });

  it('a suite with a bad config is refused, naming the field', function () {
    const rules = [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods', 'persistentvolumeclaims'] }];
    expect(suiteErrors({ type: 'Mutating', rules, handler: { name: 'DefaultResources' } })).to.deep.equal([]);
    const fields = suiteErrors({
      type: 'Validating',
      rules,
      handler: {
        name: 'DefaultResources',
        config: {
          limits: [
            { type: 'Container', max: { cpu: 'lots' }, default: { cpu: '2' } },
            { type: 'Pod', default: { cpu: '1' } },
            { type: 'Node', max: {} },
            { type: 'Container', min: { cpu: '2' }, max: { cpu: '1' }, maxLimitRequestRatio: { cpu: '0.5' }, extra: 1 },
          ],
        },
      },
    }).map((e) => e.field.replace('spec.webhooks[0].handler.config.', ''));
    expect(fields).to.have.members(['limits[0].max.cpu', 'limits[1].default', 'limits[2].type', 'limits[3].extra', 'limits[3].min.cpu', 'limits[3].maxLimitRequestRatio.cpu']);
    expect(suiteErrors({ type: 'Validating', rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['services'] }], handler: { name: 'DefaultResources' } }).map((e) => e.field)).to.deep.equal([
      'spec.webhooks[0].rules[0]',
    ]);
  });
});
