/**
 * What wakes each reconciler (src/controller/watches.ts): the keys each event adds, and the
 * registry and certificate store every replica keeps from the same events.
 */
import { expect } from 'chai';
import type { KubernetesObject } from '@kubernetes/client-node';
import { CA_SECRET, NAMESPACED, SUITE_LABEL, SUITE_VALIDATION, tlsSecretName } from '../../../src/api/names.ts';
import type { AdmissionPolicy, AdmissionSuite } from '../../../src/api/types.ts';
import { caToSecret, newCA } from '../../../src/certs/authority.ts';
import { CertificateStore } from '../../../src/certs/store.ts';
import { createCA, issueLeaf } from '../../../src/certs/x509.ts';
import { CA_KEY } from '../../../src/controller/ca.ts';
import { ORPHANS_KEY } from '../../../src/controller/orphans.ts';
import { SELF_CERTIFICATE, SELF_KEY } from '../../../src/controller/suite-validation-webhook.ts';
import { NAMESPACED_KEY } from '../../../src/controller/admission-policies.ts';
import { configurationWakes, leadingWakes, ORPHAN_SWEEP_AFTER_DELETE_MS, secretWakes, servedCertificateKey, serviceWakes, suiteWakes, Watches, type SecretObject, type WatchState } from '../../../src/controller/watches.ts';
import { componentLogger } from '../../../src/log.ts';

const state = (rotating: boolean, suites = ['a', 'b']): WatchState => ({ rotating: () => rotating, hasSuite: (n) => suites.includes(n), suiteNames: () => [...suites] });
const keys = (wakes: { key: string; afterMs?: number }[]) => wakes.map((w) => (w.afterMs === undefined ? w.key : `${w.key}@${w.afterMs}`));
const object = (name: string, labels: Record<string, string> = {}): KubernetesObject => ({ metadata: { name, labels } });

describe('controller/watches', function () {
  describe('event -> keys', function () {
    it('a suite changed wakes that suite; deleted, the orphan sweep after the garbage collector had its turn, and the CA only mid-rotation', function () {
      expect(keys(suiteWakes('a', false, state(true)))).to.deep.equal(['a']);
      expect(keys(suiteWakes('a', true, state(false)))).to.deep.equal([`${ORPHANS_KEY}@${ORPHAN_SWEEP_AFTER_DELETE_MS}`]);
      expect(keys(suiteWakes('a', true, state(true)))).to.deep.equal([CA_KEY, `${ORPHANS_KEY}@${ORPHAN_SWEEP_AFTER_DELETE_MS}`]);
    });

    it('the CA Secret wakes the CA first, then the suite-validation webhook and every suite (all sign with it)', function () {
      expect(keys(secretWakes(object(CA_SECRET), state(false)))).to.deep.equal([CA_KEY, SELF_KEY, NAMESPACED_KEY, 'a', 'b']);
    });

    it('a serving Secret wakes its owner; any other Secret nothing; mid-rotation each also wakes the CA, first', function () {
      const leaf = object(tlsSecretName('a'), { [SUITE_LABEL]: 'a' });
      expect(keys(secretWakes(leaf, state(false)))).to.deep.equal(['a']);
      expect(keys(secretWakes(leaf, state(true)))).to.deep.equal([CA_KEY, 'a']);
      expect(keys(secretWakes(object(SUITE_VALIDATION.secret), state(false))), "the AdmissionPolicies are served with the operator's certificate too").to.deep.equal([SELF_KEY, NAMESPACED_KEY]);
      // Labelled for a suite but not named as its serving Secret: not one we serve from.
      expect(keys(secretWakes(object('other', { [SUITE_LABEL]: 'a' }), state(false)))).to.deep.equal([]);
      expect(keys(secretWakes(object('other'), state(true)))).to.deep.equal([CA_KEY]);
    });

    it('a Service or a configuration wakes the suite it belongs to only while that suite exists (the sweep takes the rest)', function () {
      expect(keys(serviceWakes(object('portcullis-a', { [SUITE_LABEL]: 'a' }), state(true)))).to.deep.equal(['a']);
      expect(keys(serviceWakes(object('portcullis-gone', { [SUITE_LABEL]: 'gone' }), state(false)))).to.deep.equal([]);
      expect(keys(serviceWakes(object(SUITE_VALIDATION.service), state(false)))).to.deep.equal([SELF_KEY]);
      expect(keys(configurationWakes(object('portcullis-a', { [SUITE_LABEL]: 'a' }), state(false)))).to.deep.equal(['a']);
      expect(keys(configurationWakes(object('portcullis-gone', { [SUITE_LABEL]: 'gone' }), state(false)))).to.deep.equal([]);
      expect(keys(configurationWakes(object(SUITE_VALIDATION.configuration), state(true)))).to.deep.equal([CA_KEY, SELF_KEY]);
      expect(keys(configurationWakes(object(NAMESPACED.configuration), state(false))), "the AdmissionPolicies' configurations").to.deep.equal([NAMESPACED_KEY]);
    });

    it('a new leader looks at everything: the CA first, then the suite-validation webhook, the orphans, the AdmissionPolicies and every suite', function () {
      expect(keys(leadingWakes(state(false)))).to.deep.equal([CA_KEY, SELF_KEY, ORPHANS_KEY, NAMESPACED_KEY, 'a', 'b']);
    });

    it('serves a Secret under its owner: the operator, a suite whose serving Secret it is, or none', function () {
      expect(servedCertificateKey(object(SUITE_VALIDATION.secret))).to.equal(SELF_CERTIFICATE);
      expect(servedCertificateKey(object(tlsSecretName('a'), { [SUITE_LABEL]: 'a' }))).to.equal('a');
      expect(servedCertificateKey(object(tlsSecretName('a'), { [SUITE_LABEL]: 'b' }))).to.equal(undefined);
      expect(servedCertificateKey(object(CA_SECRET))).to.equal(undefined);
    });
  });

  describe('Watches', function () {
    const inDays = (days: number) => new Date(Date.now() + days * 86_400_000);
    const tlsData = (certPem: string, keyPem: string) => ({ 'tls.crt': Buffer.from(certPem).toString('base64'), 'tls.key': Buffer.from(keyPem).toString('base64') });

    function setup(rotating = false) {
      const added: string[] = [];
      const calls: string[] = [];
      const rotated: string[] = [];
      const certificates = new CertificateStore();
      const watches = new Watches({
        queue: { add: (key) => added.push(key), addAfter: (key, ms) => added.push(`${key}@${ms}`) },
        state: state(rotating),
        registry: {
          sync: (suite: AdmissionSuite) => (calls.push(`sync ${suite.metadata.name}`), { errors: [] }) as never,
          remove: (name: string) => void calls.push(`remove ${name}`),
        },
        policies: {
          sync: (policy) => (calls.push(`sync policy ${policy.metadata.namespace}/${policy.metadata.name}`), { errors: [] }) as never,
          remove: (namespace, name) => void calls.push(`remove policy ${namespace}/${name}`),
        },
        certificates,
        rotated: (kind) => void rotated.push(kind),
        log: componentLogger('test'),
      });
      return { watches, added, calls, rotated, certificates };
    }

    it('compiles a suite into the registry before its key is added, and removes it and its certificate when deleted', async function () {
      const { watches, added, calls, certificates } = setup();
      const suite = { metadata: { name: 'a' } } as AdmissionSuite;
      watches.suite(suite, false);
      expect(calls).to.deep.equal(['sync a']);
      expect(added).to.deep.equal(['a']);
      const ca = await createCA({ commonName: 'w-ca', notAfter: inDays(2) });
      const leaf = await issueLeaf(ca, { commonName: 'a', dnsNames: ['a.ns.svc'], usage: 'server', notAfter: inDays(1) });
      certificates.set('a', leaf.certPem, leaf.keyPem);
      watches.suite(suite, true);
      expect(calls).to.deep.equal(['sync a', 'remove a']);
      expect(certificates.served('a')).to.equal(undefined);
      expect(added).to.deep.equal(['a', `${ORPHANS_KEY}@${ORPHAN_SWEEP_AFTER_DELETE_MS}`]);
    });

    it('compiles an AdmissionPolicy into the policy registry, removes it when deleted, and wakes the one key of all policies', function () {
      const { watches, added, calls } = setup();
      const policy = { metadata: { name: 'p', namespace: 'team' } } as AdmissionPolicy;
      watches.policy(policy, false);
      watches.policy(policy, true);
      expect(calls).to.deep.equal(['sync policy team/p', 'remove policy team/p']);
      expect(added).to.deep.equal([NAMESPACED_KEY, NAMESPACED_KEY]);
    });

    it("serves a suite's and the operator's certificates from their Secrets, counts a replacement as a rotation, and drops one deleted or incomplete", async function () {
      const { watches, added, rotated, certificates } = setup();
      const ca = await createCA({ commonName: 'w-ca', notAfter: inDays(2) });
      const first = await issueLeaf(ca, { commonName: 'a', dnsNames: ['a.ns.svc'], usage: 'server', notAfter: inDays(1) });
      const second = await issueLeaf(ca, { commonName: 'a', dnsNames: ['a.ns.svc'], usage: 'server', notAfter: inDays(1) });
      const secret = (data?: Record<string, string>): SecretObject => ({ metadata: { name: tlsSecretName('a'), labels: { [SUITE_LABEL]: 'a' } }, data });

      watches.secret(secret(tlsData(first.certPem, first.keyPem)), false);
      expect(certificates.served('a')).to.equal(first.certPem);
      expect(certificates.contextFor('a.ns.svc')).to.not.equal(undefined);
      expect(rotated, 'a first certificate is no rotation').to.deep.equal([]);
      watches.secret(secret(tlsData(first.certPem, first.keyPem)), false);
      expect(rotated, 'the same certificate again is no rotation').to.deep.equal([]);
      watches.secret(secret(tlsData(second.certPem, second.keyPem)), false);
      expect(certificates.served('a')).to.equal(second.certPem);
      expect(rotated).to.deep.equal(['serving']);
      watches.secret(secret({ 'tls.crt': tlsData(second.certPem, second.keyPem)['tls.crt'] }), false);
      expect(certificates.served('a'), 'a Secret without its key serves nothing').to.equal(undefined);
      watches.secret(secret(tlsData(first.certPem, first.keyPem)), false);
      watches.secret(secret(tlsData(first.certPem, first.keyPem)), true);
      expect(certificates.served('a')).to.equal(undefined);
      expect(added).to.deep.equal(['a', 'a', 'a', 'a', 'a', 'a']);

      const self: SecretObject = { metadata: { name: SUITE_VALIDATION.secret }, data: tlsData(first.certPem, first.keyPem) };
      watches.secret(self, false);
      expect(certificates.served(SELF_CERTIFICATE)).to.equal(first.certPem);
      expect(added.slice(-2)).to.deep.equal([SELF_KEY, NAMESPACED_KEY]);
    });

    it('counts a CA rotation only when the signing CA changes, not on its first sight nor on its deletion', async function () {
      const { watches, added, rotated } = setup();
      const settings = { durationMs: 86_400_000, overlapMs: 60_000 };
      const caSecret = (state: Parameters<typeof caToSecret>[0]): SecretObject => {
        const { data, annotations } = caToSecret(state);
        return { metadata: { name: CA_SECRET, annotations }, data };
      };
      const first = await newCA(settings, new Date());
      const second = await newCA(settings, new Date());
      watches.secret(caSecret({ current: first }), false);
      watches.secret(caSecret({ current: first, next: second, nextSince: new Date() }), false);
      expect(rotated, 'a successor added signs nothing yet').to.deep.equal([]);
      watches.secret(caSecret({ current: first }), true);
      watches.secret(caSecret({ current: second, previousCertPem: first.certPem, previousSince: new Date() }), false);
      expect(rotated).to.deep.equal(['ca']);
      expect(added.slice(0, 5)).to.deep.equal([CA_KEY, SELF_KEY, NAMESPACED_KEY, 'a', 'b']);
    });

    it('adds every key when this replica starts leading, the CA first', function () {
      const { watches, added } = setup();
      watches.leading();
      expect(added).to.deep.equal([CA_KEY, SELF_KEY, ORPHANS_KEY, NAMESPACED_KEY, 'a', 'b']);
    });
  });
});
