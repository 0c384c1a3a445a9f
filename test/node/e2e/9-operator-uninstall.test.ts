/**
 * `kubectl delete -f deploy/` removes everything of Portcullis (issue 23, check 7), with suites
 * still installed: no webhook configuration (a suite's or the operator's own), Secret, Service,
 * ServiceAccount, ClusterRole, binding, Role, CRD, suite or ValidatingAdmissionPolicy is left,
 * and the namespace is gone rather than stuck Terminating (no finalizer waits for a stopped
 * operator). Runs after the other operator tests: it uninstalls what they share.
 */
import { expect } from 'chai';
import { eventually } from '../../support/wait.ts';
import { getJson, kc } from '../kubectl.ts';
import { DEPLOY_DIR, ensureOperator, OPERATOR_NS, ourObjects, seconds } from '../operator.ts';

describe('the operator uninstalled with kubectl delete -f deploy/', function () {
  this.timeout(5 * 60_000);

  it('leaves nothing of ours, and no namespace Terminating', async function () {
    await ensureOperator();
    const suites = (await getJson(['get', 'admissionsuites'])).items.length;
    expect(suites, 'suites installed when the operator is removed').to.be.above(0);
    expect(await ourObjects('validatingwebhookconfigurations')).to.not.deep.equal([]);

    const t0 = performance.now();
    await kc(['delete', '-f', DEPLOY_DIR, '--wait=true', '--timeout=120s'], undefined, 130_000);
    const deletedAt = performance.now() - t0;
    const left = await eventually(
      async () => {
        const found = await ourObjects();
        const ns = await kc(['get', 'namespace', OPERATOR_NS, '--ignore-not-found', '-o', 'name']);
        if (ns.trim()) found.push(`namespace ${OPERATOR_NS} (${(await getJson(['get', 'namespace', OPERATOR_NS])).status.phase})`);
        if (found.length) throw new Error(found.join(', '));
        return found;
      },
      { what: 'everything of Portcullis to be gone', timeoutMs: 60_000, intervalMs: 500 },
    );
    process.stderr.write(`      kubectl delete -f deploy/ returned after ${seconds(deletedAt)}; nothing left after ${seconds(performance.now() - t0)}\n`);
    expect(left).to.deep.equal([]);
    expect((await nodeCrdKinds()).filter((k) => k.includes('portcullis'))).to.deep.equal([]);
    const terminating = (await getJson(['get', 'namespaces'])).items.filter((n: { status: { phase: string } }) => n.status.phase === 'Terminating');
    expect(terminating.map((n: { metadata: { name: string } }) => n.metadata.name)).to.deep.equal([]);
  });
});

/** The API groups the API server still serves (a CRD's group goes with its last CRD). */
async function nodeCrdKinds(): Promise<string[]> {
  return (await kc(['api-resources', '-o', 'name'])).split('\n').filter(Boolean);
}
