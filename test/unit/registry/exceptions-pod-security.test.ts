/**
 * AdmissionExceptions for the PodSecurity handler (src/registry/exceptions.ts coversControl,
 * registry/compile.ts, handlers/pod-security.ts validatePodSecurity, the checks' `containers`):
 * which failures an exception's controls and images let through, and which they never do (another
 * control, a container of another image, a failure of the pod's own fields under `images`); the
 * apply-time checks of spec.podSecurity (api/exceptions.ts). Owns no API server:
 * test/e2e/exceptions-pod-security.test.ts proves the same through one.
 */
import { expect } from 'chai';
import { compileSuite } from '../../../src/registry/compile.ts';
import { ExceptionStore } from '../../../src/registry/exceptions.ts';
import { imageListed, POD_SECURITY_CONTROLS, validateException, type AdmissionException, type ExceptionSpec } from '../../../src/api/exceptions.ts';
import { EVALUATOR } from '../../../src/handlers/pod-security.ts';
import type { ClusterView } from '../../../src/handlers/handler.ts';
import type { AdmissionSuite } from '../../../src/api/types.ts';
import type { Decision } from '../../../src/api/admission-review.ts';
import { requestFor } from '../../fixtures/reviews.ts';

const NOW = Date.parse('2026-11-29T10:00:00Z');
const TOOL = 'registry.example.com/net/tool:1.2';
const OTHER = 'registry.example.com/web:1.0';
const view: ClusterView = {
  namespace: (name) => ({ apiVersion: 'v1', kind: 'Namespace', metadata: { name, labels: { 'pod-security.kubernetes.io/enforce': 'restricted' } } }),
  limitRanges: () => [],
  list: () => [],
};

const suite: AdmissionSuite = {
  apiVersion: 'admission.portcullis.dev/v1alpha1',
  kind: 'AdmissionSuite',
  metadata: { name: 'psa', uid: 'u', generation: 1 },
  spec: {
    exceptions: { allowed: true },
    webhooks: [
      { name: 'pod-security', type: 'Validating', rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }], handler: { name: 'PodSecurity' } },
      {
        name: 'team',
        type: 'Validating',
        rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }],
        validations: [{ expression: 'false', message: 'never' }],
      },
    ],
  },
};

function exceptionOf(spec: Partial<ExceptionSpec>, name = 'net-tool'): AdmissionException {
  return {
    apiVersion: 'admission.portcullis.dev/v1alpha1',
    kind: 'AdmissionException',
    metadata: { name, namespace: 'shop', uid: name },
    spec: { suite: 'psa', webhook: 'pod-security', reason: 'needs NET_ADMIN', expires: '2026-12-01T00:00:00Z', ...spec },
  };
}

/** A container `restricted` admits but for NET_ADMIN (`add`), and one it admits (`add` empty). */
const container = (name: string, image: string, add: string[] = ['NET_ADMIN']) => ({
  name,
  image,
  securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'], add } },
});

function admitter(exceptions: AdmissionException[]) {
  const store = new ExceptionStore();
  for (const exception of exceptions) store.set(exception);
  const compiled = compileSuite(suite, { view, exceptions: store, clock: () => NOW, operatorNamespace: 'portcullis-system' });
  expect(compiled.errors).to.deep.equal([]);
  return (spec: Record<string, unknown>, podSecurityContext: Record<string, unknown> = { runAsNonRoot: true }) => {
    const pod = { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'p', namespace: 'shop' }, spec: { securityContext: { seccompProfile: { type: 'RuntimeDefault' }, ...podSecurityContext }, ...spec } };
    return compiled.webhooks.get('pod-security')!.admit(requestFor('pods', 'CREATE', { namespace: 'shop', name: 'p', object: pod })) as Decision;
  };
}

describe('registry: AdmissionExceptions for PodSecurity controls and images', function () {
  it('lets the named control through for the listed images, naming the exception; other controls still deny', function () {
    const admit = admitter([exceptionOf({ podSecurity: { controls: ['capabilities'], images: ['registry.example.com/net/*'] } })]);
    const decision = admit({ containers: [container('tool', TOOL)] });
    expect(decision).to.deep.include({ allowed: true, warnings: ['admitted by exception shop/net-tool (expires 2026-12-01T00:00:00Z): needs NET_ADMIN'] });
    expect(decision.auditAnnotations).to.deep.include({ exception: 'shop/net-tool' });
    const root = admit({ containers: [container('tool', TOOL)] }, { runAsNonRoot: false });
    expect(root.allowed).to.equal(false);
    expect(root.message).to.equal('violates PodSecurity "restricted:latest": runAsNonRoot != true (pod must not set securityContext.runAsNonRoot=false)');
  });

  it('lets nothing through when one container the failure names runs another image', function () {
    const admit = admitter([exceptionOf({ podSecurity: { controls: ['capabilities'], images: [TOOL] } })]);
    expect(admit({ containers: [container('web', OTHER)] }).message).to.contain('unrestricted capabilities (container "web"');
    const both = admit({ containers: [container('tool', TOOL), container('web', OTHER)] });
    expect(both.message).to.contain('unrestricted capabilities (containers "tool", "web"');
    // A container of another image that does not fail the check does not matter.
    expect(admit({ containers: [container('tool', TOOL), container('web', OTHER, [])] }).allowed).to.equal(true);
    // Init containers are containers too.
    expect(admit({ initContainers: [container('init', OTHER)], containers: [container('tool', TOOL)] }).allowed).to.equal(false);
  });

  it("lets a failure of the pod's own fields through only when it lists no images", function () {
    const spec = { containers: [container('tool', TOOL, [])] };
    const limited = admitter([exceptionOf({ podSecurity: { controls: ['runAsNonRoot'], images: [TOOL] } })]);
    expect(limited(spec, { runAsNonRoot: false }).message).to.contain('runAsNonRoot != true (pod must not set');
    // The same control failing in the container's own field names the container: let through.
    expect(limited({ containers: [{ ...container('tool', TOOL, []), securityContext: { ...container('tool', TOOL, []).securityContext, runAsNonRoot: false } }] }, {}).allowed).to.equal(true);
    const anyImage = admitter([exceptionOf({ podSecurity: { controls: ['runAsNonRoot'] } })]);
    expect(anyImage(spec, { runAsNonRoot: false }).allowed).to.equal(true);
  });

  it('never lets a CEL validation through for an exception written for PodSecurity controls', function () {
    const store = new ExceptionStore();
    store.set(exceptionOf({ webhook: 'team', podSecurity: { controls: ['capabilities'] } }));
    const compiled = compileSuite(suite, { view, exceptions: store, clock: () => NOW, operatorNamespace: 'portcullis-system' });
    const decision = compiled.webhooks.get('team')!.admit(requestFor('configmaps', 'CREATE', { namespace: 'shop', name: 'c', object: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name: 'c', namespace: 'shop' } } })) as Decision;
    expect(decision).to.deep.include({ allowed: false, message: 'never' });
  });

  it('matches images exactly or by a prefix ending in *', function () {
    expect(imageListed([TOOL], TOOL)).to.equal(true);
    expect(imageListed([TOOL], `${TOOL}-debug`)).to.equal(false);
    expect(imageListed(['registry.example.com/net/*'], TOOL)).to.equal(true);
    expect(imageListed(['registry.example.com/net/*'], OTHER)).to.equal(false);
  });
});

describe('api: an AdmissionException for PodSecurity on apply', function () {
  const context = { protectedNamespaces: ['portcullis-system', 'kube-system', 'kube-node-lease'], suite, namespaceLabels: {} };
  const problems = (spec: Partial<ExceptionSpec>) => validateException(exceptionOf(spec), context).map((e) => `${e.field}: ${e.message}`);

  it('knows every control the handler checks, and no other', function () {
    expect([...EVALUATOR.controls].sort()).to.deep.equal([...POD_SECURITY_CONTROLS].sort());
  });

  it('accepts known controls and images; refuses unknown controls, none, bad images, validations, and podSecurity elsewhere', function () {
    expect(problems({ podSecurity: { controls: ['capabilities', 'hostPathVolumes'], images: [TOOL, 'registry.example.com/net/*'] } })).to.deep.equal([]);
    expect(problems({ podSecurity: { controls: ['capabilites'] } })[0]).to.match(/^spec\.podSecurity\.controls\[0\]: Unsupported value: "capabilites": supported values: allowPrivilegeEscalation, /);
    expect(problems({})).to.deep.equal(['spec.podSecurity: Required value: webhook pod-security is a PodSecurity webhook: name the controls it lets through (spec.podSecurity.controls)']);
    expect(problems({ podSecurity: { controls: [] } })[0]).to.match(/^spec\.podSecurity\.controls: Required value/);
    expect(problems({ podSecurity: { controls: ['capabilities'], images: ['*'] } })[0]).to.match(/^spec\.podSecurity\.images\[0\]: must be an image reference/);
    expect(problems({ podSecurity: { controls: ['capabilities'], images: ['a*b'] } })[0]).to.match(/^spec\.podSecurity\.images\[0\]: "a\*b": a \* may only end a prefix/);
    expect(problems({ podSecurity: { controls: ['capabilities'] }, validations: [0] })[0]).to.match(/^spec\.validations: webhook pod-security has no CEL validations/);
    expect(problems({ webhook: 'team', podSecurity: { controls: ['capabilities'] } })).to.deep.equal(["spec.podSecurity: webhook team's handler is not PodSecurity: podSecurity applies to a PodSecurity webhook only"]);
  });
});
