/**
 * Rotation under load: with a one-minute serving certificate and a CA of a few minutes, a loop
 * sends admissions through the API server across several leaf rotations and a CA rotation.
 * Not one admission may fail. Rotations are counted from what is actually served over TLS
 * (serial and issuer seen by a client that trusts exactly the caBundle registered at that moment).
 */
import { expect } from 'chai';
import tls from 'node:tls';
import { cluster, OPERATOR_NAMESPACE } from '../support/cluster.ts';
import { startTestOperator } from '../support/operator.ts';
import { createSuite, deleteSuite, waitForCondition } from '../support/suites.ts';
import { ensureNamespace, errorStatus } from '../support/objects.ts';
import type { Operator } from '../../src/manager/operator.ts';
import { deleteIfExists } from '../../src/apiserver/client.ts';

const SUITE = 'rotating';
const NS = 'rotation-e2e';
const SERVER_NAME = `portcullis-${SUITE}.${OPERATOR_NAMESPACE}.svc`;

interface Served {
  serial: string;
  issuer: string;
}

describe('lifecycle: certificate rotation under load', function () {
  this.timeout(360_000);
  let operator: Operator;

  before(async function () {
    await ensureNamespace(NS);
    // A fresh install: the CA that earlier tests made has a lifetime of years.
    await deleteIfExists(cluster().kube, { apiVersion: 'v1', kind: 'Secret', metadata: { name: 'portcullis-ca', namespace: OPERATOR_NAMESPACE } });
    operator = await startTestOperator({ caDurationMs: 150_000, caOverlapMs: 3_000 });
    await createSuite(SUITE, {
      certificate: { duration: '60s' },
      webhooks: [
        {
          name: 'stamp',
          type: 'Mutating',
          rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': NS } },
          mutations: [{ patch: [{ op: 'add', path: '/metadata/labels', value: { stamped: 'yes' } }] }],
        },
        {
          name: 'names',
          type: 'Validating',
          rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
          namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': NS } },
          validations: [{ expression: "!object.metadata.name.startsWith('deny-')", message: 'deny- names are refused' }],
        },
      ],
    });
    await waitForCondition(SUITE, 'Ready', 'True');
  });

  after(async function () {
    await deleteSuite(SUITE);
    await operator.stop();
  });

  it('never fails an admission across leaf and CA rotations', async function () {
    const { kube, admissionregistration } = cluster();
    let sent = 0;
    const failures: string[] = [];
    const served: Served[] = [];
    let running = true;

    // What a client sees: the served certificate, verified against the caBundle registered now.
    const observe = async () => {
      while (running) {
        const bundle = Buffer.from((await admissionregistration.readValidatingWebhookConfiguration({ name: `portcullis-${SUITE}` })).webhooks![0]!.clientConfig.caBundle!, 'base64').toString();
        await new Promise<void>((resolve) => {
          const socket = tls.connect({ host: '127.0.0.1', port: operator.servingPort, servername: SERVER_NAME, ca: bundle }, () => {
            const cert = socket.getPeerX509Certificate()!;
            const last = served.at(-1);
            if (!last || last.serial !== cert.serialNumber) served.push({ serial: cert.serialNumber, issuer: cert.issuer });
            socket.end();
            resolve();
          });
          socket.on('error', (err) => {
            failures.push(`served certificate did not verify with the registered caBundle: ${err.message}`);
            resolve();
          });
        });
        await new Promise((r) => setTimeout(r, 250));
      }
    };

    const load = async (worker: number) => {
      for (let i = 0; running; i++) {
        const deny = i % 10 === 0;
        const name = `${deny ? 'deny' : 'ok'}-${worker}-${i}`;
        sent += 1;
        try {
          const created = await kube.core.createNamespacedConfigMap({ namespace: NS, body: { metadata: { name } }, dryRun: 'All' });
          if (deny) failures.push(`${name} was admitted`);
          else if (created.metadata?.labels?.stamped !== 'yes') failures.push(`${name} was not mutated`);
        } catch (err) {
          const status = errorStatus(err);
          if (!deny || !status.message?.includes('deny- names are refused')) failures.push(`${name}: ${status.code} ${status.message}`);
        }
      }
    };

    const rotations = () => ({
      leaf: Math.max(0, served.length - 1),
      ca: Math.max(0, new Set(served.map((s) => s.issuer)).size - 1),
    });
    const started = Date.now();
    const workers = [observe(), load(1), load(2)];
    while (Date.now() - started < 300_000) {
      const { leaf, ca } = rotations();
      // Two leaf rotations and one CA rotation, then a little longer, past the old CA's removal.
      if (leaf >= 2 && ca >= 1) {
        await new Promise((r) => setTimeout(r, 15_000));
        break;
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
    running = false;
    await Promise.all(workers);
    const { leaf, ca } = rotations();
    console.log(`      ${sent} admissions sent, ${failures.length} failed; ${leaf} leaf rotations and ${ca} CA rotations served, in ${Math.round((Date.now() - started) / 1000)} s`);
    expect(failures.slice(0, 5)).to.deep.equal([]);
    expect(leaf).to.be.at.least(2);
    expect(ca).to.be.at.least(1);
    const bundle = Buffer.from((await admissionregistration.readValidatingWebhookConfiguration({ name: `portcullis-${SUITE}` })).webhooks![0]!.clientConfig.caBundle!, 'base64').toString();
    expect(bundle.match(/BEGIN CERTIFICATE/g), 'the old CA left the bundle after the overlap').to.have.length(1);
  });
});
