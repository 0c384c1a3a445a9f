/**
 * ImageRegistryAllowlist: no upstream plugin. The cases of Gatekeeper library's k8sallowedrepos
 * tests (their `repos` prefixes written as registries, their `images` as full paths) and of
 * Kyverno's restrict-image-registries sample, plus the runtime's name normalisation.
 */
import { expect } from 'chai';
import { imageRegistryAllowlist, normaliseImage } from '../../../src/handlers/image-registry-allowlist.ts';
import { EMPTY_VIEW } from '../../../src/handlers/handler.ts';
import { fixtures, pod, requestFor, requestOf } from '../../fixtures/reviews.ts';
import { suiteErrors } from '../../fixtures/patch.ts';

const configOf = (registries: string[]) => {
  const parsed = imageRegistryAllowlist.parseConfig({ registries });
  expect(parsed.errors).to.deep.equal([]);
  return parsed.config;
};
const containers = (...images: string[]) => images.map((image, i) => ({ name: `c${i}`, image }));
const check = (request: ReturnType<typeof requestFor>, registries: string[]) => imageRegistryAllowlist.validate!(request, configOf(registries), EMPTY_VIEW);
/** How many containers a denial names (0 when allowed). */
const violations = (request: ReturnType<typeof requestFor>, registries: string[]) => {
  const decision = check(request, registries);
  if (decision.allowed) return 0;
  expect(decision).to.include({ code: 403, reason: 'Forbidden' });
  expect(decision.message).to.match(/^ImageRegistryAllowlist: /);
  return (decision.message!.match(/uses image/g) ?? []).length;
};

describe('handlers: ImageRegistryAllowlist', function () {
  describe('normalises image names as the container runtime does', function () {
    const names: [string, string][] = [
      ['nginx', 'docker.io/library/nginx'],
      ['nginx:1.27', 'docker.io/library/nginx'],
      ['library/nginx', 'docker.io/library/nginx'],
      ['docker.io/nginx', 'docker.io/library/nginx'],
      ['index.docker.io/library/nginx:latest', 'docker.io/library/nginx'],
      ['myorg/app', 'docker.io/myorg/app'],
      ['localhost/app', 'localhost/app'],
      ['localhost:5000/app:v1', 'localhost:5000/app'],
      ['registry.k8s.io/pause:3.10', 'registry.k8s.io/pause'],
      ['gcr.io/project/img@sha256:26c68657ccce2cb0a31b330cb0be2b5e108d467f641c62e13ab40cbec258c68d', 'gcr.io/project/img'],
      ['ubuntu@sha256:26c68657ccce2cb0a31b330cb0be2b5e108d467f641c62e13ab40cbec258c68d', 'docker.io/library/ubuntu'],
      ['Registry/app', 'Registry/app'],
    ];
    for (const [image, name] of names) it(`${image} -> ${name}`, () => expect(normaliseImage(image)).to.equal(name));
  });

  // Gatekeeper library k8sallowedrepos src_test.rego, for containers and for init containers
  for (const list of ['containers', 'initContainers'] as const) {
    describe(`Gatekeeper k8sallowedrepos cases (${list})`, function () {
      const review = (...images: string[]) => requestFor('pods', 'CREATE', { object: pod({ [list]: containers(...images), ...(list === 'initContainers' ? { containers: [] } : {}) }) });
      const cases: [string, string[], string[], number][] = [
        ['allowed_container', ['allowed/nginx'], ['docker.io/allowed'], 0],
        ['allowed_container_x2', ['allowed/nginx'], ['docker.io/other', 'docker.io/allowed'], 0],
        ['allowed_dual_container', ['allowed/nginx', 'allowed/other'], ['docker.io/allowed'], 0],
        ['denied_container', ['denied/nginx'], ['docker.io/allowed'], 1],
        ['denied_container_x2', ['denied/nginx'], ['docker.io/other', 'docker.io/allowed'], 1],
        ['denied_dual_container', ['denied/nginx', 'denied/other'], ['docker.io/allowed'], 2],
        ['denied_mixed_container', ['allowed/nginx', 'denied/nginx'], ['docker.io/allowed'], 1],
        ['bypass_registry_mixed_container', ['myregistry.azurecr.io.malicious.com/postgress', 'myregistry.azurecr.io/postgress'], ['myregistry.azurecr.io'], 1],
        ['bypass_repository_mixed_container', ['mydockerhubmalicious/python', 'mydockerhub/python'], ['docker.io/mydockerhub'], 1],
        [
          'bypass_images_mixed_container',
          [
            'ubuntumalicious:20.04',
            '123456789123.dkr.ecr.eu-west-1.amazonaws.com/postgresmalicious',
            'ubuntu@sha256:26c68657ccce2cb0a31b330cb0be2b5e108d467f641c62e13ab40cbec258c68d',
            '123456789123.dkr.ecr.eu-west-1.amazonaws.com/postgres:latest',
          ],
          ['docker.io/library/ubuntu', '123456789123.dkr.ecr.eu-west-1.amazonaws.com/postgres'],
          2,
        ],
        [
          'images_and_repo_allowed',
          ['allowed/nginx', 'allowed/other', 'ubuntu@sha256:26c68657ccce2cb0a31b330cb0be2b5e108d467f641c62e13ab40cbec258c68d', '123456789123.dkr.ecr.eu-west-1.amazonaws.com/postgres:latest'],
          ['docker.io/allowed', 'docker.io/library/ubuntu', '123456789123.dkr.ecr.eu-west-1.amazonaws.com/postgres'],
          0,
        ],
      ];
      for (const [name, images, registries, expected] of cases) it(name, () => expect(violations(review(...images), registries)).to.equal(expected));
    });
  }

  describe("Kyverno's restrict-image-registries sample", function () {
    const registries = ['eu.foo.io/*', 'bar.io/*'];
    it('admits eu.foo.io/nginx and bar.io/busybox', () => expect(violations(requestFor('pods', 'CREATE', { object: pod({ containers: containers('eu.foo.io/nginx', 'bar.io/busybox') }) }), registries)).to.equal(0));
    it('denies busybox (docker.io), and an init container from elsewhere', () =>
      expect(violations(requestFor('pods', 'CREATE', { object: pod({ initContainers: containers('busybox'), containers: containers('bar.io/busybox', 'busybox') }) }), registries)).to.equal(2));
  });

  it('checks ephemeral containers, and names each offending container and what its image resolves to', function () {
    const decision = check(requestFor('pods', 'CREATE', { object: pod({ containers: containers('registry.k8s.io/pause'), ephemeralContainers: [{ name: 'debug', image: 'busybox:1.36' }] }) }), ['registry.k8s.io']);
    expect(decision.message).to.equal(
      'ImageRegistryAllowlist: ephemeral container "debug" uses image "busybox:1.36" (docker.io/library/busybox): not from an allowed registry (registry.k8s.io); ' +
        "use images from an allowed registry, or add the registry to the webhook's config",
    );
  });

  it('checks the Pod templates of workloads', function () {
    const deployment = requestOf(fixtures.deploymentCreate()); // nginx:1.27
    expect(imageRegistryAllowlist.validate!(deployment, configOf(['registry.k8s.io']), EMPTY_VIEW).message).to.contain('container "web" uses image "nginx:1.27" (docker.io/library/nginx)');
    expect(imageRegistryAllowlist.validate!(deployment, configOf(['docker.io/library']), EMPTY_VIEW).allowed).to.equal(true);
    const template = { spec: { containers: containers('quay.io/x/y') } };
    const workloads: [string, Record<string, unknown>][] = [
      ['replicationcontrollers', { spec: { template } }],
      ['replicasets', { spec: { template } }],
      ['statefulsets', { spec: { template } }],
      ['daemonsets', { spec: { template } }],
      ['jobs', { spec: { template } }],
      ['cronjobs', { spec: { jobTemplate: { spec: { template } } } }],
    ];
    for (const [resource, body] of workloads) {
      const object = { metadata: { name: 'w', namespace: 'team-a' }, ...body };
      expect(violations(requestFor(resource, 'CREATE', { object }), ['registry.k8s.io']), resource).to.equal(1);
      expect(violations(requestFor(resource, 'CREATE', { object }), ['quay.io/x']), resource).to.equal(0);
    }
  });

  it('on UPDATE only checks images the object did not have: scaling an old workload is allowed, a new image is not', function () {
    const old = pod({ containers: containers('busybox') });
    expect(violations(requestFor('pods', 'UPDATE', { object: pod({ containers: containers('busybox') }, { labels: { a: 'b' } }), oldObject: old }), ['registry.k8s.io'])).to.equal(0);
    expect(violations(requestFor('pods', 'UPDATE', { object: pod({ containers: containers('busybox', 'alpine') }), oldObject: old }), ['registry.k8s.io'])).to.equal(1);
    // kubectl debug: pods/ephemeralcontainers carries the whole Pod
    const debug = pod({ containers: containers('busybox'), ephemeralContainers: [{ name: 'debug', image: 'nicolaka/netshoot' }] });
    expect(violations(requestFor('pods', 'UPDATE', { object: debug, oldObject: old, subResource: 'ephemeralcontainers' }), ['registry.k8s.io'])).to.equal(1);
  });

  it('leaves DELETE with no object, other subresources and kinds without a Pod template alone', function () {
    expect(check(requestFor('pods', 'DELETE', {}), ['registry.k8s.io'])).to.deep.equal({ allowed: true });
    expect(check(requestFor('pods', 'UPDATE', { object: pod({ containers: containers('busybox') }), oldObject: pod({}), subResource: 'status' }), ['registry.k8s.io'])).to.deep.equal({ allowed: true });
    expect(check(requestFor('configmaps', 'CREATE', { object: pod({ containers: containers('busybox') }) }), ['registry.k8s.io'])).to.deep.equal({ allowed: true });
  });

  it('a suite with a bad config, or pointed at resources without Pod templates, is refused, naming the field', function () {
    const rules = [{ operations: ['CREATE', 'UPDATE'], apiGroups: ['', 'apps', 'batch'], apiVersions: ['v1'], resources: ['pods', 'deployments', 'cronjobs'] }];
    expect(
      suiteErrors({
        type: 'Validating',
        rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods', 'replicationcontrollers'] }],
        handler: { name: 'ImageRegistryAllowlist', config: { registries: ['registry.k8s.io'] } },
      }),
    ).to.deep.equal([]);
    // apiGroups x resources: '' x deployments is not a workload the handler knows
    expect(suiteErrors({ type: 'Validating', rules, handler: { name: 'ImageRegistryAllowlist', config: { registries: ['registry.k8s.io'] } } }).map((e) => e.message)).to.include(
      'handler ImageRegistryAllowlist does not serve core/deployments',
    );
    const podRules = [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }];
    expect(suiteErrors({ type: 'Validating', rules: podRules, handler: { name: 'ImageRegistryAllowlist' } }).map((e) => e.field)).to.deep.equal(['spec.webhooks[0].handler.config.registries']);
    expect(suiteErrors({ type: 'Validating', rules: podRules, handler: { name: 'ImageRegistryAllowlist', config: { registries: [] } } }).map((e) => e.field)).to.deep.equal(['spec.webhooks[0].handler.config.registries']);
    expect(suiteErrors({ type: 'Validating', rules: podRules, handler: { name: 'ImageRegistryAllowlist', config: { registries: ['nginx', 'ghcr.io/acme:v1', 'ghcr.io/acme'] } } }).map((e) => e.field)).to.deep.equal([
      'spec.webhooks[0].handler.config.registries[0]',
      'spec.webhooks[0].handler.config.registries[1]',
    ]);
    expect(suiteErrors({ type: 'Mutating', rules: podRules, handler: { name: 'ImageRegistryAllowlist', config: { registries: ['ghcr.io'] } } }).map((e) => e.field)).to.deep.equal(['spec.webhooks[0].type']);
  });
});
