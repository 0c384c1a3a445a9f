/**
 * A handler module in the operator's image, on the real node (issue 41): the example
 * examples/unique-ingress-host built as its team builds it and put in an image by its documented
 * Dockerfile, `FROM` the operator's; the operator's Deployment moved to that image, with the
 * opt-in grants of the kinds modules look up (deploy/optional/handler-module-lookups.yaml); the
 * example's suite applied. Through the API server, an Ingress whose host another namespace's
 * Ingress has is refused by the module's handler, a unique one admitted. Then the Deployment is put
 * back as deploy/ has it, and the grants removed.
 */
import { expect } from 'chai';
import path from 'node:path';
import { eventually } from '../../support/wait.ts';
import { nodeCluster } from '../hooks.ts';
import { apply, kc, namespace } from '../kubectl.ts';
import { buildHandlerModuleImage, EXAMPLE } from '../handler-module-image.ts';
import { DEPLOY_DIR, ensureOperator, leader, OPERATOR_NS, operatorImage, settledReplicas, waitSuiteReady } from '../operator.ts';
import fs from 'node:fs';
import * as k8s from '@kubernetes/client-node';

const LOOKUPS_RBAC = path.join(DEPLOY_DIR, 'optional', 'handler-module-lookups.yaml');
const NAMESPACES = ['module-team-a', 'module-team-b'];

const ingress = (name: string, ns: string, host: string) => ({
  apiVersion: 'networking.k8s.io/v1',
  kind: 'Ingress',
  metadata: { name, namespace: ns },
  spec: { rules: [{ host, http: { paths: [{ path: '/', pathType: 'Prefix', backend: { service: { name: 'web', port: { number: 80 } } } }] } }] },
});

describe("a handler module in the operator's image, on the real node", function () {
  this.timeout(10 * 60_000);
  const removals: (() => Promise<void>)[] = [];
  let suite: { metadata: { name: string } } & Record<string, unknown>;

  before(async function () {
    await ensureOperator();
    for (const ns of NAMESPACES) removals.push(await namespace(ns));
    suite = k8s.loadYaml(fs.readFileSync(path.join(EXAMPLE, 'suite.yaml'), 'utf8'));
  });

  after(async function () {
    await kc(['delete', 'admissionsuite', suite.metadata.name, '--ignore-not-found']);
    // As deploy/ installs it again: its own image, no module, no lookup grants.
    await kc(['apply', '-f', path.join(DEPLOY_DIR, '03-deployment.yaml')]);
    await kc(['delete', '-f', LOOKUPS_RBAC, '--ignore-not-found']);
    await kc(['-n', OPERATOR_NS, 'rollout', 'status', 'deployment/portcullis-operator', '--timeout=180s'], undefined, 200_000);
    await settledReplicas();
    for (const remove of removals) await remove();
  });

  it("built with the example's Dockerfile FROM the operator's image, it serves the module: a host another namespace has is refused, a unique one admitted", async function () {
    const image = await buildHandlerModuleImage(await operatorImage(), (line) => process.stderr.write(`      ${line}\n`));
    await nodeCluster().importImage(image.archive);
    await kc(['apply', '-f', LOOKUPS_RBAC]);
    await kc(['-n', OPERATOR_NS, 'set', 'image', 'deployment/portcullis-operator', `operator=${image.name}`]);
    await kc(['-n', OPERATOR_NS, 'rollout', 'status', 'deployment/portcullis-operator', '--timeout=180s'], undefined, 200_000);
    await settledReplicas();
    await leader();
    await apply(suite);
    await waitSuiteReady(suite.metadata.name);

    await apply(ingress('web', NAMESPACES[0]!, 'shop.example.com'));
    const refused = await eventually(
      async () => {
        const result = await nodeCluster().kubectl(['apply', '-f', '-'], { input: JSON.stringify(ingress('web', NAMESPACES[1]!, 'shop.example.com')) });
        if (result.code === 0) {
          await kc(['-n', NAMESPACES[1]!, 'delete', 'ingress', 'web', '--ignore-not-found']);
          throw new Error('a second Ingress of the same host was admitted');
        }
        return result.stderr;
      },
      { what: "the module's handler to refuse a taken host", timeoutMs: 60_000 },
    );
    expect(refused).to.contain('shop.example.com');
    expect(refused).to.contain(`${NAMESPACES[0]}/web`);
    await apply(ingress('web', NAMESPACES[1]!, 'blog.example.com'));
  });
});
