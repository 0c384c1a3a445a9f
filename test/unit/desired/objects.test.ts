/**
 * The objects a suite should have (src/desired/objects.ts): what the API server is told, so
 * what it does with no operator running (the protected namespaces and requests never sent), and
 * where it calls (a Service in the cluster, localhost in local mode, or the suite's own URL).
 */
import { expect } from 'chai';
import { API_VERSION, KIND, type AdmissionSuite, type WebhookSpec } from '../../../src/api/types.ts';
import { DEFAULTS, type OperatorConfig } from '../../../src/config.ts';
import { NAMESPACE_NAME_LABEL, namespacedConfiguration, service, servingNames, webhookConfigurations } from '../../../src/desired/objects.ts';
import { SELF_PROTECTION_CONDITION } from '../../../src/api/self-protection.ts';
import { NAMESPACED } from '../../../src/api/names.ts';

const cluster: OperatorConfig = { ...DEFAULTS, namespace: 'ops', servingPort: 9443, mode: 'cluster' };
const local: OperatorConfig = { ...cluster, mode: 'local', servingPort: 18443 };
const rules = [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }] as WebhookSpec['rules'];

function suite(spec: Partial<AdmissionSuite['spec']> = {}, webhooks: Partial<WebhookSpec>[] = [{}]): AdmissionSuite {
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { name: 'guards', uid: 'uid-1', generation: 1 },
    spec: { ...spec, webhooks: webhooks.map((w, i) => ({ name: `w${i}`, type: 'Validating', rules, ...w }) as WebhookSpec) },
  } as AdmissionSuite;
}

/** The single webhook entry of the suite's one configuration of `type`. */
function entries(s: AdmissionSuite, config: OperatorConfig, type: 'Validating' | 'Mutating' = 'Validating') {
  return webhookConfigurations(s, config, 'BUNDLE').get(type)!.webhooks as Record<string, any>[];
}

describe('desired/objects', function () {
  describe('namespaceSelector', function () {
    it("never sends the operator's namespace, kube-system or kube-node-lease, whatever selector the suite gives", function () {
      const [entry] = entries(suite({ namespaceSelector: { matchLabels: { team: 'a' }, matchExpressions: [{ key: 'env', operator: 'In', values: ['prod'] }] } }), cluster);
      expect(entry!.namespaceSelector).to.deep.equal({
        matchLabels: { team: 'a' },
        matchExpressions: [
          { key: 'env', operator: 'In', values: ['prod'] },
          { key: NAMESPACE_NAME_LABEL, operator: 'NotIn', values: ['ops', 'kube-system', 'kube-node-lease'] },
        ],
      });
    });

    it("takes the webhook's own selector over the suite's, still protected, and names a protected namespace once", function () {
      const s = suite({ namespaceSelector: { matchLabels: { team: 'a' } } }, [{ namespaceSelector: { matchLabels: { team: 'b' } } }]);
      const [entry] = entries(s, { ...cluster, namespace: 'kube-system' });
      expect(entry!.namespaceSelector).to.deep.equal({
        matchLabels: { team: 'b' },
        matchExpressions: [{ key: NAMESPACE_NAME_LABEL, operator: 'NotIn', values: ['kube-system', 'kube-node-lease'] }],
      });
    });
  });

  it("puts the self-protection condition before the webhook's own matchConditions, for rules that could reach a protected resource", function () {
    // Under Ignore, and reading no params: a condition the API server decides as Portcullis would, so handed to it.
    const own = { name: 'creates-only', expression: "request.operation == 'CREATE'" };
    const everything = [{ operations: ['*'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*/*'] }] as WebhookSpec['rules'];
    const [plain] = entries(suite({}, [{ rules: everything }]), cluster);
    const [withOwn] = entries(suite({}, [{ rules: everything, failurePolicy: 'Ignore', matchConditions: [own] }]), cluster);
    expect(plain!.matchConditions).to.deep.equal([SELF_PROTECTION_CONDITION]);
    expect(withOwn!.matchConditions).to.deep.equal([SELF_PROTECTION_CONDITION, own]);
    // Pods cannot be one: the API server evaluates nothing of ours per request.
    expect(entries(suite(), cluster)[0]!.matchConditions).to.deep.equal([]);
    expect(entries(suite({}, [{ failurePolicy: 'Ignore', matchConditions: [own] }]), cluster)[0]!.matchConditions).to.deep.equal([own]);
  });

  describe('clientConfig', function () {
    it('in a cluster: the Service on its own port, with the bundle in base64', function () {
      const [entry] = entries(suite({ service: { port: 8443 } }), cluster);
      expect(entry!.clientConfig).to.deep.equal({
        service: { namespace: 'ops', name: 'portcullis-guards', path: '/admit/guards/w0', port: 8443 },
        caBundle: Buffer.from('BUNDLE').toString('base64'),
      });
    });

    it("in local mode: the operator's own port (the API server dials the ExternalName Service's localhost on it)", function () {
      const [entry] = entries(suite({ service: { port: 8443 } }), local);
      expect(entry!.clientConfig.service).to.deep.equal({ namespace: 'ops', name: 'portcullis-guards', path: '/admit/guards/w0', port: 18443 });
    });

    it('with spec.url: that URL, its trailing slashes dropped, and no Service at all', function () {
      const s = suite({ url: 'https://admit.example.com:7443//' });
      expect(entries(s, cluster)[0]!.clientConfig).to.deep.equal({ url: 'https://admit.example.com:7443/admit/guards/w0', caBundle: Buffer.from('BUNDLE').toString('base64') });
      expect(service(s, cluster)).to.equal(undefined);
      expect(servingNames(s, cluster)).to.deep.equal(['admit.example.com']);
    });
  });

  describe('the Service', function () {
    it('in a cluster: a ClusterIP to the operator pods, from the suite port to the serving port, owned by the suite', function () {
      const svc = service(suite({ service: { namespace: 'elsewhere', name: 'gate', port: 8443 } }), cluster)!;
      expect(svc.metadata).to.deep.include({ name: 'gate', namespace: 'elsewhere' });
      expect((svc.metadata as any).ownerReferences).to.deep.equal([{ apiVersion: API_VERSION, kind: KIND, name: 'guards', uid: 'uid-1', controller: true, blockOwnerDeletion: false }]);
      expect(svc.spec).to.deep.equal({ type: 'ClusterIP', selector: { 'app.kubernetes.io/name': 'portcullis' }, ports: [{ name: 'https', port: 8443, targetPort: 9443, protocol: 'TCP' }] });
    });

    it('in local mode: an ExternalName to localhost', function () {
      expect(service(suite(), local)!.spec).to.deep.equal({ type: 'ExternalName', externalName: 'localhost' });
    });
  });

  it('makes one configuration per webhook type in declared order, with the defaults the contract gives, and reinvocationPolicy only on mutating webhooks', function () {
    const s = suite({ failurePolicy: 'Ignore', timeoutSeconds: 3 }, [{ name: 'v1' }, { name: 'm1', type: 'Mutating' }, { name: 'v2', failurePolicy: 'Fail', timeoutSeconds: 9 }]);
    const configurations = webhookConfigurations(s, cluster, 'BUNDLE');
    expect([...configurations.keys()]).to.deep.equal(['Mutating', 'Validating']);
    expect(configurations.get('Validating')!.metadata).to.deep.include({ name: 'portcullis-guards' });
    const [v1, v2] = entries(s, cluster);
    expect(v1).to.include({ name: 'v1.guards.admission.portcullis.dev', failurePolicy: 'Ignore', timeoutSeconds: 3, matchPolicy: 'Equivalent', sideEffects: 'None' });
    expect(v1).to.not.have.property('reinvocationPolicy');
    expect(v1!.admissionReviewVersions).to.deep.equal(['v1', 'v1beta1']);
    expect(v2).to.include({ failurePolicy: 'Fail', timeoutSeconds: 9 });
    expect(entries(s, cluster, 'Mutating')[0]).to.include({ name: 'm1.guards.admission.portcullis.dev', reinvocationPolicy: 'Never' });
    expect(webhookConfigurations(suite(), cluster, 'BUNDLE').has('Mutating')).to.equal(false);
  });

  describe('resourceNames and excludeResourceRules', function () {
    it('registers the rules without names, and writes the rest as a matchCondition (after self-protection, when the rules need it)', function () {
      const named = [{ ...rules[0]!, resourceNames: ['web'] }];
      const exclude = [{ operations: ['DELETE'], apiGroups: ['*'], apiVersions: ['*'], resources: ['pods/*'] }];
      const [entry] = entries(suite({}, [{ rules: named, excludeResourceRules: exclude, matchConditions: [{ name: 'mine', expression: "request.operation != 'CONNECT'" }] }]), cluster);
      expect(entry!.rules).to.deep.equal(rules);
      expect(entry!.matchConditions.map((c: { name: string }) => c.name)).to.deep.equal(['portcullis-resource-match', 'mine']);
      const [wide] = entries(suite({}, [{ rules: [{ ...named[0]!, apiGroups: ['*'] }], excludeResourceRules: exclude }]), cluster);
      expect(wide!.matchConditions.map((c: { name: string }) => c.name)).to.deep.equal([SELF_PROTECTION_CONDITION.name, 'portcullis-resource-match']);
      expect(entry!.matchConditions[0].expression).to.equal(
        '((request.operation in ["CREATE"] && request.resource.group in [""] && request.resource.version in ["v1"] && (request.resource.resource == "pods" && !has(request.subResource)) && (has(request.name) && request.name in ["web"]))) && !(request.operation in ["DELETE"] && (request.resource.resource == "pods"))',
      );
    });

    it('writes no such condition for a webhook that has neither', function () {
      expect(entries(suite(), cluster)[0]!.matchConditions).to.deep.equal([]);
    });
  });

  describe("the AdmissionPolicies' configurations", function () {
    const metadata = { name: 'ignored', labels: { 'app.kubernetes.io/managed-by': 'portcullis' }, ownerReferences: [] };
    const ref = { namespace: 'ops', name: 'portcullis-operator', port: 443 };
    const deployments = [{ operations: ['CREATE', 'UPDATE'], apiGroups: ['apps'], apiVersions: ['v1'], resources: ['deployments'] }];

    it('exists only while a policy of its type is served', function () {
      expect(namespacedConfiguration('Mutating', [], metadata, ref, cluster, 'BUNDLE')).to.equal(undefined);
    });

    it("sends only the namespaces that have policies, only the resources they name, namespaced only, to the operator's own Service", function () {
      const configuration = namespacedConfiguration(
        'Validating',
        [
          { namespace: 'team-b', rules },
          { namespace: 'team-a', rules: deployments },
          { namespace: 'team-a', rules },
        ],
        metadata,
        ref,
        cluster,
        'BUNDLE',
      )!;
      expect(configuration).to.deep.include({ kind: 'ValidatingWebhookConfiguration' });
      expect((configuration.metadata as { name: string }).name).to.equal(NAMESPACED.configuration);
      const webhook = (configuration.webhooks as Record<string, any>[])[0]!;
      expect(webhook.namespaceSelector.matchExpressions).to.deep.equal([
        { key: NAMESPACE_NAME_LABEL, operator: 'In', values: ['team-a', 'team-b'] },
        { key: NAMESPACE_NAME_LABEL, operator: 'NotIn', values: ['ops', 'kube-system', 'kube-node-lease'] },
      ]);
      expect(webhook.rules, 'the union, each rule once').to.have.length(2);
      expect(webhook.rules.every((r: { scope: string }) => r.scope === 'Namespaced')).to.equal(true);
      expect(webhook.matchConditions, 'pods and deployments cannot reach a protected resource').to.deep.equal([]);
      expect(webhook.clientConfig.service).to.deep.equal({ namespace: 'ops', name: 'portcullis-operator', path: NAMESPACED.paths.Validating, port: 443 });
      expect(webhook).to.include({ failurePolicy: 'Fail', sideEffects: 'None' });
    });

    it('keeps the self-protection condition when a policy could reach Leases', function () {
      const everything = [{ operations: ['UPDATE'], apiGroups: ['*'], apiVersions: ['*'], resources: ['*'] }];
      const webhook = (namespacedConfiguration('Validating', [{ namespace: 'team-a', rules: everything }], metadata, ref, cluster, 'BUNDLE')!.webhooks as Record<string, any>[])[0]!;
      expect(webhook.matchConditions).to.deep.equal([SELF_PROTECTION_CONDITION]);
    });

    it("sorts before every suite's configuration, so the API server calls the teams' mutations first and a suite's mutation has the last word", function () {
      // A suite's name is a DNS label: it starts with a letter or a digit, both after '-'.
      for (const suite of ['a', 'zzz', 'portcullis', '0', '0-', 'a-b']) expect(NAMESPACED.configuration < `portcullis-${suite}`, suite).to.equal(true);
    });
  });
});
