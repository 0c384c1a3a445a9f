/**
 * The exception validation webhook fails closed (issue 55): with the operator stopped (its
 * endpoint gone, its configuration still registered) creating an AdmissionException or a
 * ClusterAdmissionException is refused, deleting one is not, and suites can still be created (their
 * webhook stays Ignore); with it running, exceptions are created as before. Owns its namespace
 * (xfc-a), suites (xfc-*) and the exceptions named xfc-*; touches nothing else.
 */
import { expect } from 'chai';
import { cluster } from '../support/cluster.ts';
import { startTestOperator, waitForSuiteValidation } from '../support/operator.ts';
import { createSuite, deleteSuite, getSuite, teamLabelSuite, waitForCondition } from '../support/suites.ts';
import { ensureNamespace, refusal } from '../support/objects.ts';
import { eventually } from '../support/wait.ts';
import { deleteIfExists } from '../../src/apiserver/client.ts';
import { GROUP, VERSION } from '../../src/api/types.ts';
import { CLUSTER_EXCEPTION_PLURAL, EXCEPTION_PLURAL, EXCEPTIONS, type ExceptionSpec } from '../../src/api/exceptions.ts';
import type { Operator } from '../../src/manager/operator.ts';

const A = 'xfc-a';
const LABEL = { 'exceptions-fail-closed-e2e': 'true' };
const SUITE = 'xfc-team-labels';
const OFFLINE_SUITE = 'xfc-written-offline';
const KEPT = 'xfc-kept';

const suiteSpec = teamLabelSuite(LABEL);
const spec: ExceptionSpec = { suite: SUITE, webhook: 'team-label', reason: 'legacy objects, labelled by the migration', expires: '2099-01-01T00:00:00Z' };
const exception = (name: string) => ({ apiVersion: `${GROUP}/${VERSION}`, kind: 'AdmissionException', metadata: { name, namespace: A }, spec });
const clusterException = (name: string) => ({ apiVersion: `${GROUP}/${VERSION}`, kind: 'ClusterAdmissionException', metadata: { name }, spec });
const createException = (name: string) => cluster().kube.custom.createNamespacedCustomObject({ group: GROUP, version: VERSION, plural: EXCEPTION_PLURAL, namespace: A, body: exception(name) });
const createClusterException = (name: string) => cluster().kube.custom.createClusterCustomObject({ group: GROUP, version: VERSION, plural: CLUSTER_EXCEPTION_PLURAL, body: clusterException(name) });
const unanswered = `failed calling webhook "${EXCEPTIONS.validationWebhook}"`;

describe('AdmissionExceptions: their validation webhook fails closed', function () {
  let operator: Operator | undefined;

  before(async function () {
    await ensureNamespace(A, LABEL);
    operator = await startTestOperator();
    await waitForSuiteValidation(operator);
    await createSuite(SUITE, suiteSpec);
    await waitForCondition(SUITE, 'Ready', 'True');
  });

  after(async function () {
    const { kube } = cluster();
    for (const name of [KEPT, 'xfc-offline']) await deleteIfExists(kube, exception(name) as never);
    for (const name of ['xfc-cluster-kept', 'xfc-cluster-offline']) await deleteIfExists(kube, clusterException(name) as never);
    for (const name of [SUITE, OFFLINE_SUITE]) await deleteSuite(name);
    await operator?.stop();
  });

  it('creates exceptions as before while the operator answers', async function () {
    // The suite's Ready condition can come before the exception webhook has the suite in view.
    await eventually(async () => expect(await refusal(() => createException(KEPT))).to.equal(undefined), { what: 'the exception to be admitted' });
    expect(await refusal(() => createClusterException('xfc-cluster-kept'))).to.equal(undefined);
  });

  it('refuses creating exceptions while no operator answers, and still lets them be deleted and suites be written', async function () {
    await operator!.stop();
    operator = undefined;
    // Stopped means its server is closed: the very next create finds no one to answer.
    expect((await refusal(() => createException('xfc-offline')))?.message ?? 'admitted').to.contain(unanswered);
    expect((await refusal(() => createClusterException('xfc-cluster-offline')))?.message ?? 'admitted').to.contain(unanswered);
    const { kube } = cluster();
    expect(await refusal(() => kube.custom.deleteNamespacedCustomObject({ group: GROUP, version: VERSION, plural: EXCEPTION_PLURAL, namespace: A, name: KEPT }))).to.equal(undefined);
    expect(await refusal(() => kube.custom.deleteClusterCustomObject({ group: GROUP, version: VERSION, plural: CLUSTER_EXCEPTION_PLURAL, name: 'xfc-cluster-kept' }))).to.equal(undefined);
    // The suites' entry in the same configuration stays Ignore: a stopped operator never blocks editing suites.
    expect(await refusal(() => createSuite(OFFLINE_SUITE, suiteSpec))).to.equal(undefined);
    expect(await getSuite(OFFLINE_SUITE)).to.not.equal(undefined);
  });
});
