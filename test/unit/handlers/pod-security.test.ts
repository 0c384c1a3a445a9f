/**
 * PodSecurity, the handler alone: every upstream fixture at its level and version (the API server's
 * defaulting of a volume with no source applied, as upstream's own fixture test does), upstream's
 * PolicyToEvaluate cases, the request flow of admission.go (exemptions, updates, templates,
 * namespaces, the warnings about existing pods from the Pod lookup), the audit annotations, the
 * suite's own defaults and namespacePolicies, and config refused naming the field.
 */
import { expect } from 'chai';
import { podSecurity } from '../../../src/handlers/pod-security.ts';
import { EVALUATOR } from '../../../src/handlers/pod-security.ts';
import { parseVersion, policyToEvaluate, LATEST, v1, type Policy } from '../../../src/handlers/pod-security/levels.ts';
import { forbiddenDetail } from '../../../src/handlers/pod-security/checks.ts';
import type { PodSecurityConfig } from '../../../src/handlers/pod-security/config.ts';
import { suiteErrors } from '../../fixtures/patch.ts';
import { pod, requestFor } from '../../fixtures/reviews.ts';
import { namespace, viewOf } from '../../fixtures/views.ts';
import { podSecurityFixtures } from '../../support/pod-security-fixtures.ts';
import type { AdmissionRequest } from '../../../src/api/admission-review.ts';

const L = (mode: string) => `pod-security.kubernetes.io/${mode}`;
const config = (raw: Record<string, unknown> = {}): PodSecurityConfig => {
  const parsed = podSecurity.parseConfig(raw);
  expect(parsed.errors).to.deep.equal([]);
  return parsed.config;
};
const PRIVILEGED = { securityContext: { privileged: true } };
const RESTRICTED = { securityContext: { allowPrivilegeEscalation: false, capabilities: { drop: ['ALL'] }, runAsNonRoot: true, seccompProfile: { type: 'RuntimeDefault' } } };
const podWith = (container: Record<string, unknown> = {}, spec: Record<string, unknown> = {}, metadata: Record<string, unknown> = {}) => pod({ containers: [{ name: 'app', image: 'nginx', ...container }], ...spec }, metadata);
const nsView = (labels: Record<string, string>, pods: Record<string, unknown>[] = [], name = 'team-a') => viewOf({ namespaces: [namespace(name, undefined, labels)], lookups: { Pod: pods } });
const validate = (request: AdmissionRequest, cfg: PodSecurityConfig, view = nsView({})) => podSecurity.validate!(request, cfg, view);

describe('handlers: PodSecurity', function () {
  describe('the upstream fixtures, each at its level and version', function () {
    it('passes every pass fixture and fails every fail fixture (4,537)', function () {
      this.timeout(60_000);
      const wrong: string[] = [];
      const fixtures = podSecurityFixtures();
      for (const f of fixtures) {
        // The API server defaults a volume with no source to emptyDir before admission.
        const spec = structuredClone(f.pod.spec ?? {});
        for (const volume of spec.volumes ?? []) if (Object.keys(volume).length === 1) volume.emptyDir = {};
        const result = EVALUATOR.aggregate({ level: f.level, version: parseVersion(f.version).version }, f.pod.metadata ?? {}, spec);
        if (result.allowed !== (f.expect === 'pass')) wrong.push(`${f.level}/${f.version}/${f.expect}/${f.file}: ${forbiddenDetail(result)}`);
      }
      expect(fixtures.length).to.equal(4537);
      expect(wrong).to.deep.equal([]);
    });

    it('evaluates latest and versions newer than the library as its newest (v1.37)', function () {
      const tcpKeepalive = { securityContext: { sysctls: [{ name: 'net.ipv4.tcp_notsent_lowat', value: '1' }] } };
      for (const version of [LATEST, v1(37), v1(99)]) expect(EVALUATOR.aggregate({ level: 'baseline', version }, {}, tcpKeepalive).allowed, JSON.stringify(version)).to.equal(true);
      expect(forbiddenDetail(EVALUATOR.aggregate({ level: 'baseline', version: v1(36) }, {}, tcpKeepalive))).to.equal('forbidden sysctls (net.ipv4.tcp_notsent_lowat)');
    });
  });

  describe('namespace labels (api.PolicyToEvaluate)', function () {
    const defaults: Policy = { enforce: { level: 'privileged', version: LATEST }, audit: { level: 'privileged', version: LATEST }, warn: { level: 'privileged', version: LATEST } };
    it('reads levels and versions, warning follows a stricter enforce level set by label', function () {
      const { policy, errors } = policyToEvaluate({ [L('enforce')]: 'baseline', [L('enforce-version')]: 'v1.24' }, defaults);
      expect(errors).to.deep.equal([]);
      expect(policy.enforce).to.deep.equal({ level: 'baseline', version: v1(24) });
      expect(policy.warn).to.deep.equal({ level: 'baseline', version: v1(24) });
      expect(policy.audit).to.deep.equal(defaults.audit);
    });
    it('reads bad labels as upstream: enforce restricted, audit and warn privileged, versions latest; each an error', function () {
      const { policy, errors } = policyToEvaluate({ [L('enforce')]: 'strict', [L('audit')]: 'x', [L('warn-version')]: '1.24' }, defaults);
      expect(policy.enforce.level).to.equal('restricted');
      expect(policy.audit.level).to.equal('privileged');
      expect(policy.warn).to.deep.equal({ level: 'privileged', version: LATEST });
      expect(errors.map((e) => e.label)).to.deep.equal([L('enforce'), L('audit'), L('warn-version')]);
    });
  });

  describe('pods', function () {
    const restricted = nsView({ [L('enforce')]: 'restricted', [L('audit')]: 'restricted', [L('warn')]: 'restricted' });

    it('denies an enforce violation in upstream words, with the enforce-policy and audit-violations annotations', function () {
      const decision = validate(requestFor('pods', 'CREATE', { object: podWith(PRIVILEGED) }), config(), nsView({ [L('enforce')]: 'baseline', [L('enforce-version')]: 'v1.30', [L('audit')]: 'restricted' }));
      expect(decision.allowed).to.equal(false);
      expect(decision.code).to.equal(403);
      expect(decision.message).to.equal('violates PodSecurity "baseline:v1.30": privileged (container "app" must not set securityContext.privileged=true)');
      expect(decision.warnings).to.equal(undefined);
      expect(decision.auditAnnotations?.['enforce-policy']).to.equal('baseline:v1.30');
      expect(decision.auditAnnotations?.['audit-violations']).to.match(/^would violate PodSecurity "restricted:latest": privileged \(container "app" must not set securityContext.privileged=true\), allowPrivilegeEscalation != false/);
    });

    it('warns (warn level) and admits when enforce allows', function () {
      const decision = validate(requestFor('pods', 'CREATE', { object: podWith() }), config(), nsView({ [L('warn')]: 'restricted', [L('warn-version')]: 'v1.37' }));
      expect(decision.allowed).to.equal(true);
      expect(decision.warnings).to.deep.equal([
        'would violate PodSecurity "restricted:v1.37": allowPrivilegeEscalation != false (container "app" must set securityContext.allowPrivilegeEscalation=false), unrestricted capabilities (container "app" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "app" must set securityContext.runAsNonRoot=true), seccompProfile (pod or container "app" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")',
      ]);
      expect(decision.auditAnnotations).to.deep.equal({ 'enforce-policy': 'privileged:latest' });
    });

    it('a fully privileged namespace is answered at once with enforce-policy privileged:latest', function () {
      expect(validate(requestFor('pods', 'CREATE', { object: podWith(PRIVILEGED) }), config())).to.deep.equal({ allowed: true, auditAnnotations: { 'enforce-policy': 'privileged:latest' } });
    });

    it('exempts users, namespaces and runtime classes, saying which in the exempt annotation', function () {
      const cfg = config({ exemptions: { usernames: ['ci-bot'], namespaces: ['team-a'], runtimeClasses: ['kata'] } });
      expect(validate(requestFor('pods', 'CREATE', { object: podWith(PRIVILEGED) }), cfg, restricted)).to.deep.equal({ allowed: true, auditAnnotations: { exempt: 'namespace' } });
      const other = viewOf({ namespaces: [namespace('team-b', undefined, { [L('enforce')]: 'restricted' })] });
      const byUser = { ...requestFor('pods', 'CREATE', { object: podWith(PRIVILEGED), namespace: 'team-b' }), userInfo: { username: 'ci-bot' } };
      expect(validate(byUser, cfg, other)).to.deep.equal({ allowed: true, auditAnnotations: { exempt: 'user' } });
      const kata = requestFor('pods', 'CREATE', { object: podWith(PRIVILEGED, { runtimeClassName: 'kata' }), namespace: 'team-b' });
      expect(validate(kata, cfg, other)).to.deep.equal({ allowed: true, auditAnnotations: { exempt: 'runtimeClass' } });
    });

    it('judges updates that change an image or add an ephemeral container, and no others; ignores exec, status and the like', function () {
      const old = podWith(PRIVILEGED);
      const relabelled = { ...podWith(PRIVILEGED), metadata: { name: 'app', namespace: 'team-a', labels: { a: 'b' } } };
      expect(validate(requestFor('pods', 'UPDATE', { object: relabelled, oldObject: old }), config(), restricted)).to.deep.equal({ allowed: true });
      const newImage = podWith({ ...PRIVILEGED, image: 'nginx:2' });
      expect(validate(requestFor('pods', 'UPDATE', { object: newImage, oldObject: old }), config(), restricted).allowed).to.equal(false);
      const withDebug = pod({ containers: [{ name: 'app', image: 'nginx', ...RESTRICTED }], ephemeralContainers: [{ name: 'debug', image: 'busybox' }], securityContext: {} });
      const before = pod({ containers: [{ name: 'app', image: 'nginx', ...RESTRICTED }] });
      const ephemeral = validate(requestFor('pods', 'UPDATE', { object: withDebug, oldObject: before, subResource: 'ephemeralcontainers' }), config(), restricted);
      expect(ephemeral.allowed).to.equal(false);
      expect(ephemeral.message).to.contain('container "debug" must set securityContext.allowPrivilegeEscalation=false');
      for (const subResource of ['exec', 'attach', 'binding', 'eviction', 'log', 'portforward', 'proxy', 'status']) {
        expect(validate(requestFor('pods', 'CREATE', { object: podWith(PRIVILEGED), subResource }), config(), restricted), subResource).to.deep.equal({ allowed: true });
      }
      expect(validate(requestFor('pods', 'DELETE', { oldObject: podWith(PRIVILEGED) }), config(), restricted)).to.deep.equal({ allowed: true });
    });

    it('records unparsable labels in the error annotation and evaluates as upstream reads them', function () {
      const decision = validate(requestFor('pods', 'CREATE', { object: podWith(RESTRICTED) }), config(), nsView({ [L('enforce')]: 'strict' }));
      expect(decision.allowed).to.equal(true);
      expect(decision.auditAnnotations).to.deep.equal({
        error: 'Failed to parse policy: metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted',
        'enforce-policy': 'restricted:latest',
      });
    });

    it('a namespace the operator has not seen is an error, answered by failurePolicy', function () {
      expect(() => validate(requestFor('pods', 'CREATE', { object: podWith(), namespace: 'new' }), config(), viewOf())).to.throw('namespace "new" is not in the operator\'s cache yet');
    });
  });

  describe('workload templates', function () {
    const deployment = (container: Record<string, unknown>) => ({
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: { name: 'web', namespace: 'team-a' },
      spec: { template: { metadata: { labels: { app: 'web' } }, spec: { containers: [{ name: 'app', image: 'nginx', ...container }] } } },
    });

    it('are warned and audited, never denied, whatever the enforce level', function () {
      const view = nsView({ [L('enforce')]: 'restricted', [L('audit')]: 'baseline' });
      const decision = validate(requestFor('deployments', 'CREATE', { object: deployment(PRIVILEGED) }), config(), view);
      expect(decision.allowed).to.equal(true);
      expect(decision.warnings?.[0]).to.match(/^would violate PodSecurity "restricted:latest": privileged/);
      expect(decision.auditAnnotations).to.deep.equal({ 'audit-violations': 'would violate PodSecurity "baseline:latest": privileged (container "app" must not set securityContext.privileged=true)' });
    });

    it('finds the template of every kind upstream knows (CronJobs two levels down, PodTemplates at template)', function () {
      const view = nsView({ [L('warn')]: 'baseline' });
      const template = { spec: { containers: [{ name: 'app', image: 'nginx', ...PRIVILEGED }] } };
      const objects: [string, Record<string, unknown>][] = [
        ['cronjobs', { metadata: { name: 'c' }, spec: { jobTemplate: { spec: { template } } } }],
        ['jobs', { metadata: { name: 'j' }, spec: { template } }],
        ['replicationcontrollers', { metadata: { name: 'r' }, spec: { template } }],
        ['podtemplates', { metadata: { name: 'p' }, template }],
      ];
      for (const [resource, object] of objects) expect(validate(requestFor(resource, 'CREATE', { object }), config(), view).warnings, resource).to.have.length(1);
      // A ReplicationController without a template has nothing to judge.
      expect(validate(requestFor('replicationcontrollers', 'CREATE', { object: { metadata: { name: 'r' }, spec: {} } }), config(), view)).to.deep.equal({ allowed: true });
      // Subresources (scale) are not judged.
      expect(validate(requestFor('deployments', 'UPDATE', { object: deployment(PRIVILEGED), subResource: 'scale' }), config(), view)).to.deep.equal({ allowed: true });
    });
  });

  describe('namespaces', function () {
    const ns = (labels: Record<string, string>) => namespace('team-a', undefined, labels) as Record<string, unknown>;
    const update = (from: Record<string, string>, to: Record<string, string>) => requestFor('namespaces', 'UPDATE', { object: ns(to), oldObject: ns(from), namespace: 'team-a' });
    const existing = (name: string, container: Record<string, unknown>, extra: Record<string, unknown> = {}) => pod({ containers: [{ name: 'app', image: 'nginx', ...container }] }, { name, ...extra });

    it('refuses unparsable labels on create and on a change, in field.Invalid words, 422', function () {
      const decision = validate(requestFor('namespaces', 'CREATE', { object: ns({ [L('enforce')]: 'strict', [L('audit-version')]: '1.30' }) }), config());
      expect(decision).to.include({ allowed: false, code: 422 });
      expect(decision.message).to.equal(
        '[metadata.labels[pod-security.kubernetes.io/enforce]: Invalid value: "strict": must be one of privileged, baseline, restricted, metadata.labels[pod-security.kubernetes.io/audit-version]: Invalid value: "1.30": must be "latest" or "v1.x"]',
      );
      // Labels already wrong may stay as wrong.
      const same = { [L('enforce')]: 'strict' };
      expect(validate(update(same, { ...same, other: 'x' }), config()).allowed).to.equal(true);
    });

    it('warns of the existing pods a tightened enforce level refuses, one warning per reason, naming the first pod', function () {
      const pods = [existing('b', PRIVILEGED), existing('a', PRIVILEGED), existing('c', PRIVILEGED), existing('host', {}, {}), existing('kata', PRIVILEGED)];
      (pods[3]!.spec as Record<string, unknown>).hostNetwork = true;
      (pods[4]!.spec as Record<string, unknown>).runtimeClassName = 'kata';
      const cfg = config({ exemptions: { runtimeClasses: ['kata'] } });
      const decision = validate(update({}, { [L('enforce')]: 'baseline' }), cfg, nsView({}, pods));
      expect(decision).to.deep.equal({
        allowed: true,
        warnings: ['existing pods in namespace "team-a" violate the new PodSecurity enforce level "baseline:latest"', 'a (and 2 other pods): privileged', 'host: host namespaces'],
      });
      // Relaxing within the version, privileged, or no enforce change: nothing is checked.
      expect(validate(update({ [L('enforce')]: 'restricted' }, { [L('enforce')]: 'baseline' }), cfg, nsView({}, pods))).to.deep.equal({ allowed: true });
      expect(validate(update({ [L('enforce')]: 'baseline' }, { [L('enforce')]: 'baseline', [L('warn')]: 'restricted' }), cfg, nsView({}, pods))).to.deep.equal({ allowed: true });
    });

    it('checks one pod per controller first and says when it stopped at 3,000', function () {
      const owned = (i: number) => existing(`r-${String(i).padStart(4, '0')}`, PRIVILEGED, { ownerReferences: [{ controller: true, uid: 'rs-1', kind: 'ReplicaSet', name: 'rs', apiVersion: 'apps/v1' }] });
      const pods = [...Array.from({ length: 3000 }, (_, i) => owned(i)), existing('z-alone', {}, {})];
      (pods[3000]!.spec as Record<string, unknown>).hostPID = true;
      const decision = validate(update({}, { [L('enforce')]: 'baseline' }), config(), nsView({}, pods));
      expect(decision.warnings).to.deep.equal([
        'new PodSecurity enforce level only checked against the first 3000 of 3001 existing pods',
        'existing pods in namespace "team-a" violate the new PodSecurity enforce level "baseline:latest"',
        'r-0000 (and 2998 other pods): privileged',
        'z-alone: host namespaces',
      ]);
    });

    it('an exempt namespace that sets a policy is told it will be ignored', function () {
      const cfg = config({ exemptions: { namespaces: ['team-a'] } });
      expect(validate(update({}, { [L('enforce')]: 'restricted', [L('audit-version')]: 'v1.30' }), cfg).warnings).to.deep.equal(['namespace "team-a" is exempt from Pod Security, and the policy (enforce=restricted:latest) will be ignored']);
    });
  });

  describe("the suite's own policies", function () {
    it('defaults apply where a namespace has no label; labels still win', function () {
      const cfg = config({ defaults: { enforce: 'baseline', enforceVersion: 'v1.30', warn: 'restricted' } });
      const denied = validate(requestFor('pods', 'CREATE', { object: podWith(PRIVILEGED) }), cfg);
      expect(denied.message).to.match(/^violates PodSecurity "baseline:v1.30": privileged/);
      expect(validate(requestFor('pods', 'CREATE', { object: podWith(PRIVILEGED) }), cfg, nsView({ [L('enforce')]: 'privileged' })).allowed).to.equal(true);
    });

    it('namespacePolicies give the first selected namespace its levels; ignoreNamespaceLabels makes them binding', function () {
      const cfg = config({
        namespacePolicies: [
          { namespaceSelector: { matchLabels: { tier: 'prod' } }, enforce: 'restricted', ignoreNamespaceLabels: true },
          { namespaceSelector: { matchExpressions: [{ key: 'tier', operator: 'Exists' }] }, enforce: 'baseline' },
        ],
      });
      const create = requestFor('pods', 'CREATE', { object: podWith(PRIVILEGED) });
      // prod: restricted even though the namespace's own label says privileged
      expect(validate(create, cfg, nsView({ tier: 'prod', [L('enforce')]: 'privileged' })).message).to.match(/^violates PodSecurity "restricted:latest"/);
      // dev: baseline, and its label may relax it
      expect(validate(create, cfg, nsView({ tier: 'dev' })).message).to.match(/^violates PodSecurity "baseline:latest"/);
      expect(validate(create, cfg, nsView({ tier: 'dev', [L('enforce')]: 'privileged' })).allowed).to.equal(true);
      // no tier: the defaults (privileged)
      expect(validate(create, cfg, nsView({})).allowed).to.equal(true);
    });
  });

  describe('config', function () {
    it('is refused on apply naming each field', function () {
      const errors = suiteErrors({
        type: 'Validating',
        rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }],
        handler: {
          name: 'PodSecurity',
          config: {
            defaults: { enforce: 'strict', warnVersion: '1.30', typo: 1 },
            exemptions: { usernames: [''] },
            namespacePolicies: [{ enforce: 'baseline' }, { namespaceSelector: { matchExpressions: [{ key: 'a', operator: 'In' }] }, ignoreNamespaceLabels: 'yes' }],
            levels: {},
          },
        },
      }).map((e) => e.field);
      const at = 'spec.webhooks[0].handler.config.';
      expect(errors).to.have.members([
        `${at}levels`,
        `${at}defaults.typo`,
        `${at}defaults.enforce`,
        `${at}defaults.warnVersion`,
        `${at}exemptions.usernames[0]`,
        `${at}namespacePolicies[0].namespaceSelector`,
        `${at}namespacePolicies[1].namespaceSelector.matchExpressions[0].values`,
        `${at}namespacePolicies[1].ignoreNamespaceLabels`,
      ]);
    });

    it('serves pods, namespaces and the workload kinds, and looks up Pods', function () {
      expect(podSecurity.lookups).to.deep.equal(['Pod']);
      const served = podSecurity.resources.map((r) => `${r.group}/${r.resource}`);
      expect(served).to.include.members(['/pods', '/namespaces', 'apps/deployments', 'batch/cronjobs', '/podtemplates']);
    });
  });
});
