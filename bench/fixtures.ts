/** What the benchmarks send: a typical Pod AdmissionReview, a 50-container Pod, and the suites that judge them. */
import type { AdmissionReview } from '../src/api/admission-review.ts';
import { API_VERSION, KIND, type AdmissionSuite, type WebhookSpec } from '../src/api/types.ts';

const podRule = [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['pods'] }];

function container(i: number) {
  return {
    name: `c${i}`,
    image: `registry.example.com/team/app-${i}:1.${i}.0`,
    imagePullPolicy: 'IfNotPresent',
    ports: [{ containerPort: 8080 + i, protocol: 'TCP' }],
    env: [
      { name: 'MODE', value: 'production' },
      { name: 'INDEX', value: String(i) },
    ],
    resources: { requests: { cpu: '100m', memory: '128Mi' }, limits: { cpu: '500m', memory: '256Mi' } },
    securityContext: { runAsNonRoot: true, allowPrivilegeEscalation: false },
  };
}

export function podReview(containers: number): AdmissionReview {
  return {
    apiVersion: 'admission.k8s.io/v1',
    kind: 'AdmissionReview',
    request: {
      uid: '5f0c7a52-6a0c-4b8e-9d1e-2b8e7c1d3f40',
      kind: { group: '', version: 'v1', kind: 'Pod' },
      resource: { group: '', version: 'v1', resource: 'pods' },
      requestKind: { group: '', version: 'v1', kind: 'Pod' },
      requestResource: { group: '', version: 'v1', resource: 'pods' },
      name: 'web-7d9f8b6c5-x2x7p',
      namespace: 'team-a',
      operation: 'CREATE',
      userInfo: { username: 'system:serviceaccount:kube-system:replicaset-controller', uid: 'a1b2', groups: ['system:serviceaccounts', 'system:serviceaccounts:kube-system', 'system:authenticated'] },
      object: {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
          name: 'web-7d9f8b6c5-x2x7p',
          namespace: 'team-a',
          labels: { app: 'web', team: 'payments', 'pod-template-hash': '7d9f8b6c5' },
          annotations: { 'kubectl.kubernetes.io/restartedAt': '2026-11-01T10:00:00Z' },
          ownerReferences: [{ apiVersion: 'apps/v1', kind: 'ReplicaSet', name: 'web-7d9f8b6c5', uid: 'f00', controller: true, blockOwnerDeletion: true }],
        },
        spec: {
          serviceAccountName: 'web',
          containers: Array.from({ length: containers }, (_, i) => container(i)),
          restartPolicy: 'Always',
          terminationGracePeriodSeconds: 30,
          dnsPolicy: 'ClusterFirst',
          securityContext: { fsGroup: 2000 },
          tolerations: [{ key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute', tolerationSeconds: 300 }],
        },
      },
      oldObject: null,
      dryRun: false,
      options: { apiVersion: 'meta.k8s.io/v1', kind: 'CreateOptions' },
    },
  };
}

const TEN_VALIDATIONS: WebhookSpec['validations'] = [
  { expression: 'object.metadata.labels.all(k, k.size() < 64)' },
  { expression: 'has(object.metadata.labels.team)', message: 'every Pod names its team' },
  { expression: 'object.spec.containers.all(c, c.image.startsWith("registry.example.com/"))', message: 'images come from registry.example.com' },
  { expression: 'object.spec.containers.all(c, has(c.resources.limits) && has(c.resources.limits.memory))' },
  { expression: 'object.spec.containers.all(c, c.securityContext.runAsNonRoot == true)' },
  { expression: 'object.spec.containers.all(c, c.securityContext.allowPrivilegeEscalation == false)' },
  { expression: 'object.spec.containers.size() <= 64' },
  { expression: '!has(object.spec.hostNetwork) || object.spec.hostNetwork == false' },
  { expression: 'object.spec.terminationGracePeriodSeconds <= 120' },
  { expression: "request.userInfo.username != 'system:anonymous'", messageExpression: "'anonymous users may not create ' + request.kind.kind" },
];

export function benchSuite(): AdmissionSuite {
  return {
    apiVersion: 'admission.portcullis.dev/v1alpha1',
    kind: 'AdmissionSuite',
    metadata: { name: 'bench', uid: 'bench-uid', generation: 1 },
    spec: {
      webhooks: [
        { name: 'guards', type: 'Validating', rules: podRule, validations: TEN_VALIDATIONS },
        {
          name: 'defaults',
          type: 'Mutating',
          rules: podRule,
          mutations: [
            { condition: "!('tier' in object.metadata.labels)", patch: [{ op: 'add', path: '/metadata/labels/tier', value: 'standard' }] },
            {
              patchExpression: 'object.spec.containers.filter(c, c.imagePullPolicy != "Always").map(c, {"op": "replace", "path": "/spec/containers/" + string(object.spec.containers.indexOf(c)) + "/imagePullPolicy", "value": "Always"})',
            },
          ],
        },
      ],
    },
  };
}

export const SERVER_NAME = 'portcullis-bench.portcullis-system.svc';

/** The end-to-end bench's rule (bench/e2e.ts): at most 10 keys in a ConfigMap. */
export const E2E_RULE = { expression: 'object.data.size() <= 10', message: 'at most 10 keys' };

/** The end-to-end bench's suite: one validating webhook `keys` on ConfigMap creates with E2E_RULE. */
export function e2eSuite(namespaceSelector?: Record<string, unknown>): AdmissionSuite {
  return {
    apiVersion: API_VERSION,
    kind: KIND,
    metadata: { name: 'bench', uid: 'bench-e2e', generation: 1 } as AdmissionSuite['metadata'],
    spec: {
      failurePolicy: 'Fail',
      ...(namespaceSelector ? { namespaceSelector } : {}),
      webhooks: [{ name: 'keys', type: 'Validating', rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'], resources: ['configmaps'] }], validations: [E2E_RULE] }],
    },
  };
}
