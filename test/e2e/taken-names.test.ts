/**
 * Writing an object under a name no one was seen to have, without reading it first: the names
 * come from a metadata-only watch (src/apiserver/names.ts), and the write is an apply without force
 * (applyNew), so an object someone made meanwhile is reported as theirs and left as it is.
 */
import { expect } from 'chai';
import { cluster, OPERATOR_NAMESPACE } from '../support/cluster.ts';
import { eventually } from '../support/wait.ts';
import { applyNew, deleteIfExists, ForeignObjectError, getObject, type KubeObject } from '../../src/apiserver/client.ts';
import { watchTakenNames } from '../../src/apiserver/names.ts';
import { MANAGED_BY_LABELS } from '../../src/api/names.ts';
import { logger } from '../../src/log.ts';

const service = (name: string, selector: Record<string, string>, labels: Record<string, string> = {}) =>
  ({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: OPERATOR_NAMESPACE, labels }, spec: { ports: [{ port: 443, targetPort: 9443 }], selector } }) as KubeObject & {
    apiVersion: string;
    kind: string;
    metadata: { name: string; namespace: string };
  };

describe("taken names: written without a read, never over someone else's object", function () {
  const made: KubeObject[] = [];
  after(async function () {
    for (const object of made) await deleteIfExists(cluster().kube, object as never);
  });

  it("knows every name of a collection, anyone's, as objects come and go", async function () {
    const names = watchTakenNames(cluster().kubeConfig, `/api/v1/namespaces/${OPERATOR_NAMESPACE}/services`, logger);
    try {
      await eventually(async () => expect(names.taken('names-test-a', OPERATOR_NAMESPACE)).to.not.equal(undefined), { what: 'the first list' });
      expect(names.taken('names-test-a', OPERATOR_NAMESPACE)).to.equal(false);
      const theirs = service('names-test-a', { app: 'theirs' });
      made.push(theirs);
      await cluster().kube.objects.create(theirs as never);
      await eventually(async () => expect(names.taken('names-test-a', OPERATOR_NAMESPACE)).to.equal(true), { what: 'the created name to be seen' });
      await deleteIfExists(cluster().kube, theirs as never);
      await eventually(async () => expect(names.taken('names-test-a', OPERATOR_NAMESPACE)).to.equal(false), { what: 'the deleted name to be freed' });
    } finally {
      await names.stop();
    }
  });

  it('creates an object no one has, and refuses, leaving it as it is, one someone made meanwhile', async function () {
    const ours = service('names-test-b', { app: 'ours' }, { ...MANAGED_BY_LABELS });
    made.push(ours);
    const created = await applyNew(cluster().kube, ours);
    expect(created.metadata?.labels).to.include(MANAGED_BY_LABELS);

    const theirs = service('names-test-c', { app: 'theirs' });
    made.push(theirs);
    await cluster().kube.objects.create(theirs as never);
    const refused = await applyNew(cluster().kube, service('names-test-c', { app: 'ours' }, { ...MANAGED_BY_LABELS })).then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(refused).to.be.instanceOf(ForeignObjectError);
    const after = (await getObject(cluster().kube, theirs as never)) as KubeObject & { spec: { selector: Record<string, string> } };
    expect(after.spec.selector).to.deep.equal({ app: 'theirs' });
    expect(after.metadata?.labels ?? {}).to.deep.equal({});
  });
});
