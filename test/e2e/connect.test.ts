/**
 * CONNECT requests end to end through the real API server: `pods/exec`, `pods/attach` and
 * `pods/portforward` reach a suite's webhooks as CONNECT (kind PodExecOptions and the like, the
 * options as `object`, no oldObject), judged by the DenyEscalatingExec handler and by CEL
 * validations. The test control plane has no nodes: the API server runs admission before it looks
 * for the Pod's node (apiserver endpoints/handlers ConnectResource), so Pods are only stored, a
 * request admission lets through fails after it ("does not have a host assigned", 400), and a
 * denial is the webhook's (403). Each request is first sent without the suite, where it fails only
 * for want of a node, so every refusal below is the suite's. Scoped to this file's namespaces.
 */
import { expect } from 'chai';
import * as k8s from '@kubernetes/client-node';
import { cluster, kubectl } from '../support/cluster.ts';
import { startTestOperator } from '../support/operator.ts';
import { createSuite, deleteSuite, waitForCondition } from '../support/suites.ts';
import { ensureNamespace } from '../support/objects.ts';
import { rawRequest, type RawResponse } from '../support/raw.ts';
import { eventually } from '../support/wait.ts';
import { isNotFound } from '../../src/apiserver/client.ts';
import type { Operator } from '../../src/manager/operator.ts';
import type { LabelSelector, RuleWithOperations } from '../../src/api/types.ts';

const NS = { dev: 'connect-dev', prod: 'connect-prod' };
const SUITE = 'connect';
const IMAGE = 'registry.k8s.io/pause:3.10';

const only = (...namespaces: string[]): LabelSelector => ({ matchExpressions: [{ key: 'kubernetes.io/metadata.name', operator: 'In', values: namespaces }] });
const connectRule = (...subresources: string[]): RuleWithOperations => ({ operations: ['CONNECT'], apiGroups: [''], apiVersions: ['v1'], resources: subresources.map((s) => `pods/${s}`) });

const PODS: Record<string, Partial<k8s.V1PodSpec>> = {
  plain: {},
  privileged: { containers: [{ name: 'app', image: IMAGE, securityContext: { privileged: true } }] },
  'host-pid': { hostPID: true },
};

/** What kubectl exec, attach and port-forward send, as one plain request (no stream upgrade: admission answers first). */
const QUERIES: Record<string, string> = { exec: '?command=ls&stdout=true&stderr=true', attach: '?stdout=true&stderr=true', portforward: '?ports=8080' };
const connect = (namespace: string, pod: string, sub: string): Promise<RawResponse> => rawRequest('POST', `/api/v1/namespaces/${namespace}/pods/${pod}/${sub}${QUERIES[sub]}`);

/** How the API server answers a CONNECT that admission let through, on a cluster with no node. */
function expectPassedAdmission(response: RawResponse, pod: string, what: string): void {
  expect(response.status, `${what}: ${JSON.stringify(response.body)}`).to.equal(400);
  expect(response.body.message, what).to.equal(`pod ${pod} does not have a host assigned`);
}

/** The suite's refusal of a CONNECT; retried while the API server has not loaded the webhook yet. */
async function refused(namespace: string, pod: string, sub: string): Promise<RawResponse> {
  return eventually(
    async () => {
      const response = await connect(namespace, pod, sub);
      if (response.status === 400) throw new Error(`${sub} into ${namespace}/${pod} passed admission`);
      return response;
    },
    { what: `${sub} into ${namespace}/${pod} to be refused` },
  );
}

describe('CONNECT (exec, attach, port-forward) through the real API server', function () {
  let operator: Operator;

  before(async function () {
    this.timeout(120_000);
    await ensureNamespace(NS.dev);
    await ensureNamespace(NS.prod, { env: 'production' });
    for (const namespace of Object.values(NS)) {
      for (const [name, spec] of Object.entries(PODS)) {
        try {
          await cluster().kube.core.createNamespacedPod({ namespace, body: { metadata: { name }, spec: { containers: [{ name: 'app', image: IMAGE }], ...spec } } });
        } catch (err) {
          if ((err as { code?: number }).code !== 409) throw err;
        }
      }
    }
    operator = await startTestOperator();
  });

  after(async function () {
    this.timeout(120_000);
    await deleteSuite(SUITE);
    for (const name of Object.values(NS)) {
      try {
        await cluster().kube.core.deleteNamespace({ name });
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
    await operator?.stop();
  });

  it('without a suite, every CONNECT passes admission and fails only for want of a node', async function () {
    for (const namespace of Object.values(NS)) {
      for (const pod of Object.keys(PODS)) {
        for (const sub of ['exec', 'attach', 'portforward']) expectPassedAdmission(await connect(namespace, pod, sub), pod, `${sub} into ${namespace}/${pod}`);
      }
    }
  });

  it('DenyEscalatingExec and a CEL rule on CONNECT: escalating and production execs refused, the rest let through', async function () {
    this.timeout(120_000);
    await createSuite(SUITE, {
      namespaceSelector: only(NS.dev, NS.prod),
      webhooks: [
        { name: 'escalating', type: 'Validating', rules: [connectRule('exec', 'attach')], handler: { name: 'DenyEscalatingExec' } },
        {
          name: 'production',
          type: 'Validating',
          rules: [connectRule('exec', 'attach', 'portforward')],
          validations: [
            {
              expression: "namespaceObject.metadata.?labels.?env.orValue('') != 'production'",
              // (VAP's default reason is Invalid, 422: a refusal of who may do what reads better as 403)
              reason: 'Forbidden',
              // What the API server sent, said back: the options' kind as `object`, the subresource, no oldObject.
              messageExpression:
                "'no ' + request.subResource + ' into ' + request.name + ' in production (operation ' + request.operation + ', kind ' + request.kind.kind + ', object ' + object.kind + ', oldObject ' + (oldObject == null ? 'null' : 'set') + ')'",
            },
          ],
        },
      ],
    });
    await waitForCondition(SUITE, 'Ready', 'True');

    const privileged = await refused(NS.dev, 'privileged', 'exec');
    expect(privileged.status).to.equal(403);
    expect(privileged.body.message).to.equal('admission webhook "escalating.connect.admission.portcullis.dev" denied the request: pods "privileged" is forbidden: cannot exec into or attach to a privileged container');
    const hostPid = await refused(NS.dev, 'host-pid', 'attach');
    expect(hostPid.status).to.equal(403);
    expect(hostPid.body.message).to.contain('pods "host-pid" is forbidden: cannot exec into or attach to a container using host pid');
    // The handler judges exec and attach only; port-forward into a privileged pod passes it.
    expectPassedAdmission(await connect(NS.dev, 'privileged', 'portforward'), 'privileged', 'port-forward into dev/privileged');
    expectPassedAdmission(await connect(NS.dev, 'plain', 'exec'), 'plain', 'exec into dev/plain');
    expectPassedAdmission(await connect(NS.dev, 'plain', 'attach'), 'plain', 'attach into dev/plain');

    const prodExec = await refused(NS.prod, 'plain', 'exec');
    expect(prodExec.status).to.equal(403);
    expect(prodExec.body.message).to.equal(
      'admission webhook "production.connect.admission.portcullis.dev" denied the request: no exec into plain in production (operation CONNECT, kind PodExecOptions, object PodExecOptions, oldObject null)',
    );
    const prodAttach = await refused(NS.prod, 'plain', 'attach');
    expect(prodAttach.body.message).to.contain('no attach into plain in production (operation CONNECT, kind PodAttachOptions, object PodAttachOptions, oldObject null)');
    const prodForward = await refused(NS.prod, 'plain', 'portforward');
    expect(prodForward.body.message).to.contain('no portforward into plain in production (operation CONNECT, kind PodPortForwardOptions, object PodPortForwardOptions, oldObject null)');

    // kubectl exec itself (a streaming upgrade) is refused the same way, before any stream.
    const viaKubectl = await kubectl(['exec', '-n', NS.dev, 'privileged', '--', 'ls']);
    expect(viaKubectl.code).to.not.equal(0);
    expect(viaKubectl.stderr).to.contain('cannot exec into or attach to a privileged container');
    const allowed = await kubectl(['exec', '-n', NS.dev, 'plain', '--', 'ls']);
    expect(allowed.code).to.not.equal(0);
    expect(allowed.stderr).to.contain('does not have a host assigned');
  });
});
