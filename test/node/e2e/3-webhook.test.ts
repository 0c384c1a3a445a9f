/**
 * The API server calls an admission webhook the way it calls one in a real cluster: registered
 * with clientConfig.service (not a URL), served by a pod behind a ClusterIP Service that
 * kube-proxy routes, over TLS verified against the caBundle.
 */
import { expect } from 'chai';
import { createCA, issueLeaf } from '../../../src/certs/x509.ts';
import { eventually } from '../../support/wait.ts';
import { nodeCluster } from '../hooks.ts';
import { apply, deployment, getJson, kc, namespace, waitAvailable } from '../kubectl.ts';

const NS = 'webhook';
const b64 = (text: string) => Buffer.from(text).toString('base64');

function registration(name: string, caPem: string, objectSelector: object) {
  return {
    apiVersion: 'admissionregistration.k8s.io/v1',
    kind: 'ValidatingWebhookConfiguration',
    metadata: { name },
    webhooks: [
      {
        name: `${name}.portcullis.dev`,
        clientConfig: { service: { namespace: NS, name: 'node-webhook', path: '/validate', port: 443 }, caBundle: b64(caPem) },
        rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
        namespaceSelector: { matchLabels: { 'kubernetes.io/metadata.name': NS } },
        objectSelector,
        failurePolicy: 'Fail',
        sideEffects: 'None',
        admissionReviewVersions: ['v1'],
        timeoutSeconds: 5,
      },
    ],
  };
}

const configMap = (name: string, labels: Record<string, string> = {}) => JSON.stringify({ apiVersion: 'v1', kind: 'ConfigMap', metadata: { name, namespace: NS, labels }, data: { a: 'b' } });

describe('node cluster: an admission webhook in a pod behind a ClusterIP Service', function () {
  let removeNamespace: () => Promise<void>;
  let caPem = '';
  before(async function () {
    removeNamespace = await namespace(NS);
    const notAfter = new Date(Date.now() + 24 * 3600_000);
    const ca = await createCA({ commonName: 'node-webhook-test-ca', notAfter });
    caPem = ca.certPem;
    const serving = await issueLeaf(ca, { commonName: 'node-webhook', dnsNames: [`node-webhook.${NS}.svc`], usage: 'server', notAfter });
    await apply(
      {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: { name: 'node-webhook-tls', namespace: NS },
        type: 'kubernetes.io/tls',
        data: { 'tls.crt': b64(serving.certPem), 'tls.key': b64(serving.keyPem) },
      },
      deployment('node-webhook', NS, 1, {
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: 'webhook',
            image: nodeCluster().images.webhook,
            imagePullPolicy: 'Never',
            ports: [{ containerPort: 8443 }],
            readinessProbe: { httpGet: { scheme: 'HTTPS', path: '/healthz', port: 8443 }, periodSeconds: 1 },
            volumeMounts: [{ name: 'tls', mountPath: '/tls', readOnly: true }],
          },
        ],
        volumes: [{ name: 'tls', secret: { secretName: 'node-webhook-tls' } }],
      }),
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'node-webhook', namespace: NS },
        spec: { selector: { app: 'node-webhook' }, ports: [{ port: 443, targetPort: 8443 }] },
      },
    );
    await waitAvailable('node-webhook', NS);
  });
  after(async function () {
    await kc(['delete', 'validatingwebhookconfiguration', 'node-webhook', 'node-webhook-wrong-ca', '--ignore-not-found']);
    await removeNamespace();
  });

  it('allows what it allows and denies what it denies', async function () {
    await apply(registration('node-webhook', caPem, { matchExpressions: [{ key: 'portcullis.dev/wrong-ca', operator: 'DoesNotExist' }] }));
    // Registration, endpoints and kube-proxy's rules settle in a moment; until then the call fails.
    let n = 0;
    await eventually(async () => kc(['create', '-f', '-'], configMap(`allowed-${n++}`)), { what: 'the webhook to allow a ConfigMap', timeoutMs: 60_000 });
    const denied = await nodeCluster().kubectl(['create', '-f', '-'], { input: configMap('denied', { 'portcullis.dev/deny': 'true' }) });
    expect(denied.code).to.not.equal(0);
    expect(denied.stderr).to.contain('admission webhook "node-webhook.portcullis.dev" denied the request: denied by the node-webhook pod: denied');
    expect((await nodeCluster().kubectl(['get', 'configmap', '-n', NS, 'denied'])).code).to.not.equal(0);
    const pod = (await getJson(['get', 'pods', '-n', NS, '-l', 'app=node-webhook'])).items[0].metadata.name;
    expect(await kc(['logs', '-n', NS, pod])).to.match(/review \S+ of "denied": allowed=false/);
  });

  it('is not called over TLS that does not verify against the caBundle', async function () {
    const other = await createCA({ commonName: 'some-other-ca', notAfter: new Date(Date.now() + 3600_000) });
    await apply(registration('node-webhook-wrong-ca', other.certPem, { matchLabels: { 'portcullis.dev/wrong-ca': 'true' } }));
    await eventually(
      async () => {
        const r = await nodeCluster().kubectl(['create', '-f', '-'], { input: configMap('wrong-ca', { 'portcullis.dev/wrong-ca': 'true' }) });
        expect(r.code).to.not.equal(0);
        expect(r.stderr).to.match(/failed calling webhook "node-webhook-wrong-ca\.portcullis\.dev".*(x509|certificate signed by unknown authority|failed to verify certificate)/);
      },
      { what: 'the call with the wrong CA to fail on TLS', timeoutMs: 60_000 },
    );
  });
});
