/**
 * The node cluster runs pods: a Deployment of the test image, its pods on the pod network,
 * `kubectl logs` and `exec`, a ClusterIP Service answering another pod (by ClusterIP: the
 * cluster has no DNS add-on), and a clear failure for an image that is not there.
 */
import { expect } from 'chai';
import { eventually } from '../../support/wait.ts';
import { nodeCluster } from '../hooks.ts';
import { apply, deployment, getJson, kc, namespace, testPod, waitAvailable } from '../kubectl.ts';

const NS = 'workloads';
const PAGE = 'portcullis node test image';

/** An HTTP GET with busybox's nc (its wget segfaults in busybox-static 1.35). */
const httpGet = (host: string, port: number, nc = 'nc') => ['sh', '-c', `printf 'GET / HTTP/1.0\\r\\n\\r\\n' | ${nc} -w 3 ${host} ${port}`];

describe('node cluster: workloads', function () {
  let removeNamespace: () => Promise<void>;
  before(async function () {
    removeNamespace = await namespace(NS);
  });
  after(async function () {
    await removeNamespace();
  });

  it('a Deployment of 2 replicas of the test image becomes Available on the pod network', async function () {
    await apply(
      deployment('web', NS, 2, {
        terminationGracePeriodSeconds: 1,
        containers: [
          {
            name: 'main',
            image: nodeCluster().images.test,
            imagePullPolicy: 'Never',
            command: ['sh', '-c', 'echo "hello from $(hostname)"; exec httpd -f -v -p 8080 -h /www'],
            ports: [{ containerPort: 8080 }],
            readinessProbe: { tcpSocket: { port: 8080 }, periodSeconds: 1 },
          },
        ],
      }),
    );
    await waitAvailable('web', NS);
    const pods = await getJson(['get', 'pods', '-n', NS, '-l', 'app=web']);
    expect(pods.items).to.have.length(2);
    const node = await getJson(['get', 'node', nodeCluster().nodeName]);
    const prefix = node.spec.podCIDR.replace(/0\/24$/, '');
    for (const pod of pods.items) {
      expect(pod.status.phase).to.equal('Running');
      expect(pod.status.podIP.startsWith(prefix), `${pod.status.podIP} in ${node.spec.podCIDR}`).to.equal(true);
      expect(pod.status.hostIP).to.equal('10.213.0.2');
    }
    expect(new Set(pods.items.map((p: { status: { podIP: string } }) => p.status.podIP)).size).to.equal(2);
  });

  it('kubectl logs shows what a container wrote', async function () {
    const pods = await getJson(['get', 'pods', '-n', NS, '-l', 'app=web']);
    for (const pod of pods.items) {
      await eventually(async () => expect(await kc(['logs', '-n', NS, pod.metadata.name])).to.contain(`hello from ${pod.metadata.name}`), {
        what: `the logs of ${pod.metadata.name}`,
      });
    }
  });

  it('kubectl exec runs a command in a container, with stdin', async function () {
    const pod = (await getJson(['get', 'pods', '-n', NS, '-l', 'app=web'])).items[0].metadata.name;
    expect(await kc(['exec', '-n', NS, pod, '--', 'cat', '/www/index.html'])).to.equal(`${PAGE}\n`);
    expect(await kc(['exec', '-i', '-n', NS, pod, '--', 'tr', 'a-z', 'A-Z'], 'through stdin\n')).to.equal('THROUGH STDIN\n');
    expect(await kc(['exec', '-n', NS, pod, '--', 'hostname'])).to.equal(`${pod}\n`);
  });

  it('a ClusterIP Service answers from a third pod, and from the node', async function () {
    await apply(
      {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: { name: 'web', namespace: NS },
        spec: { selector: { app: 'web' }, ports: [{ port: 80, targetPort: 8080 }] },
      },
      { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'client', namespace: NS }, spec: testPod(['sleep', '3600']) },
    );
    await kc(['wait', '-n', NS, 'pod/client', '--for=condition=Ready', '--timeout=60s'], undefined, 70_000);
    const clusterIP: string = (await getJson(['get', 'service', '-n', NS, 'web'])).spec.clusterIP;
    expect(clusterIP).to.match(/^10\.214\.0\.\d+$/);
    // Several requests: kube-proxy spreads them over both endpoints, and each must answer.
    for (let i = 0; i < 4; i++) {
      const answer = await eventually(
        async () => {
          const out = await kc(['exec', '-n', NS, 'client', '--', ...httpGet(clusterIP, 80)]);
          if (!out.includes(PAGE)) throw new Error(`answer: ${out}`);
          return out;
        },
        { what: `the Service ${clusterIP}:80 to answer`, timeoutMs: 60_000 },
      );
      expect(answer).to.match(/^HTTP\/1\.[01] 200 OK/);
    }
    const fromNode = await nodeCluster().inNetns('busybox', httpGet(clusterIP, 80, 'busybox nc'));
    expect(fromNode.stdout, fromNode.stderr).to.contain(PAGE);
  });

  it('a pod whose image is not there fails with an event saying so, without hanging', async function () {
    await apply({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name: 'absent', namespace: NS },
      spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: 'localhost/portcullis-absent:1' }] },
    });
    const waiting = await eventually(
      async () => {
        const pod = await getJson(['get', 'pod', '-n', NS, 'absent']);
        const state = pod.status.containerStatuses?.[0]?.state?.waiting;
        if (!state || !['ErrImagePull', 'ImagePullBackOff'].includes(state.reason)) throw new Error(`state: ${JSON.stringify(state)}`);
        return state;
      },
      { what: 'the pull of a missing image to fail', timeoutMs: 60_000 },
    );
    expect(waiting.message).to.contain('localhost/portcullis-absent:1');
    const events = await getJson(['get', 'events', '-n', NS, '--field-selector', 'involvedObject.name=absent']);
    const failed = events.items.filter((e: { reason: string }) => e.reason === 'Failed').map((e: { message: string }) => e.message);
    expect(failed.join('\n')).to.match(/Failed to pull image "localhost\/portcullis-absent:1"/);
  });
});
