/**
 * The Helm chart (charts/portcullis), with a real Helm built from Go modules: it lints clean, its
 * defaults render exactly what `kubectl apply -f deploy/` installs (so the two never drift), its
 * values change what they say, and the API server accepts what it renders.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDeepStrictEqual } from 'node:util';
import * as k8s from '@kubernetes/client-node';
import { kubectl } from '../support/cluster.ts';
import { ensureHelm } from '../../src/local/binaries.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CHART = path.join(ROOT, 'charts/portcullis');

type Manifest = k8s.KubernetesObject & Record<string, any>;
const key = (o: Manifest) => `${o.kind} ${o.metadata?.namespace ? `${o.metadata.namespace}/` : ''}${o.metadata?.name}`;

function parse(text: string): Map<string, Manifest> {
  const objects = new Map<string, Manifest>();
  for (const object of k8s.loadAllYaml(text) as Manifest[]) if (object) objects.set(key(object), JSON.parse(JSON.stringify(object)));
  return objects;
}

describe('charts/portcullis: the Helm chart', function () {
  this.timeout(600_000);
  let helmBinary: string;
  const helm = (args: string[]) =>
    new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
      execFile(helmBinary, args, { maxBuffer: 64 * 1024 * 1024 }, (err, stdout, stderr) => resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr }));
    });
  const render = async (...set: string[]) => {
    const result = await helm(['template', 'portcullis', CHART, '--namespace', 'portcullis-system', ...set.flatMap((s) => ['--set', s])]);
    expect(result.code, result.stderr).to.equal(0);
    return parse(result.stdout);
  };

  before(async function () {
    helmBinary = await ensureHelm();
  });

  it('lints clean in strict mode', async function () {
    const result = await helm(['lint', '--strict', CHART]);
    expect(result.code, result.stdout + result.stderr).to.equal(0);
    expect(result.stdout).to.contain('0 chart(s) failed');
  });

  it('renders with its defaults exactly what deploy/ installs, but the Namespace (helm install --create-namespace)', async function () {
    const chart = await render();
    const deploy = new Map<string, Manifest>();
    // deploy/'s numbered files, as `kubectl apply -f deploy/` reads them (not its optional/ folder).
    const files = fs
      .readdirSync(path.join(ROOT, 'deploy'), { withFileTypes: true })
      .filter((f) => f.isFile())
      .map((f) => f.name);
    for (const file of files.sort()) for (const [k, o] of parse(fs.readFileSync(path.join(ROOT, 'deploy', file), 'utf8'))) deploy.set(k, o);
    deploy.delete('Namespace portcullis-system');
    expect([...chart.keys()].sort()).to.deep.equal([...deploy.keys()].sort());
    for (const [k, object] of chart) expect(isDeepStrictEqual(object, deploy.get(k)), `${k} differs from deploy/'s`).to.equal(true);
    // (That files/crd.yaml is crds/'s, byte for byte, is test/e2e/manifests-drift.test.ts's.)
  });

  it("leaves out the guards' MutatingAdmissionPolicies for Kubernetes 1.35, which does not serve them, and nothing else", async function () {
    const newest = await render();
    const result = await helm(['template', 'portcullis', CHART, '--namespace', 'portcullis-system', '--kube-version', '1.35.4']);
    expect(result.code, result.stderr).to.equal(0);
    const oldest = parse(result.stdout);
    const left = [...newest.keys()].filter((k) => !oldest.has(k)).sort();
    expect(left).to.deep.equal([
      'MutatingAdmissionPolicy portcullis-admission-policy-author',
      'MutatingAdmissionPolicy portcullis-suite-author',
      'MutatingAdmissionPolicyBinding portcullis-admission-policy-author',
      'MutatingAdmissionPolicyBinding portcullis-suite-author',
    ]);
    for (const [k, object] of oldest) expect(isDeepStrictEqual(object, newest.get(k)), k).to.equal(true);
    // Older than the supported range: refused by the chart's kubeVersion.
    const older = await helm(['template', 'portcullis', CHART, '--kube-version', '1.34.4']);
    expect(older.code).to.not.equal(0);
    expect(older.stderr).to.contain('kubeVersion');
  });

  it('follows its values: namespace, image digest, flags, scheduling, toggles', async function () {
    const chart = parse(
      (
        await helm([
          'template',
          'portcullis',
          CHART,
          '--namespace',
          'policy',
          '--set',
          'image.repository=registry.example.com/portcullis',
          '--set',
          'image.digest=sha256:' + 'a'.repeat(64),
          '--set',
          'replicaCount=3',
          '--set',
          'leaderElection.leaseDuration=30s',
          '--set',
          'logLevel=debug',
          '--set',
          'extraArgs[0]=--shutdown-delay=8s',
          '--set',
          'nodeSelector.pool=system',
          '--set',
          'priorityClassName=system-cluster-critical',
          '--set',
          'metrics.service.enabled=true',
          '--set',
          'metrics.serviceMonitor.enabled=true',
          '--set',
          'crds.install=false',
          '--set',
          'networkPolicy.enabled=false',
          '--set',
          'podDisruptionBudget.enabled=false',
          '--set',
          'namespacedPolicies.mutations=false',
          '--set',
          'namespacedPolicies.costBudget=50000',
        ])
      ).stdout,
    );
    const deployment = chart.get('Deployment policy/portcullis-operator')!;
    const pod = deployment.spec.template.spec;
    expect(deployment.spec.replicas).to.equal(3);
    expect(pod.containers[0].image).to.equal(`registry.example.com/portcullis@sha256:${'a'.repeat(64)}`);
    expect(pod.containers[0].args).to.deep.equal(['--mode=cluster', '--lease-duration=30s', '--namespaced-policy-mutations=false', '--namespaced-policy-cost-budget=50000', '--shutdown-delay=8s']);
    expect(pod.containers[0].env).to.deep.include({ name: 'PORTCULLIS_LOG_LEVEL', value: 'debug' });
    expect(pod.nodeSelector).to.deep.equal({ pool: 'system' });
    expect(pod.priorityClassName).to.equal('system-cluster-critical');
    expect(chart.has('Service policy/portcullis-operator-metrics')).to.equal(true);
    expect(chart.has('ServiceMonitor policy/portcullis-operator')).to.equal(true);
    expect(chart.has('CustomResourceDefinition admissionsuites.admission.portcullis.dev')).to.equal(false);
    expect(chart.has('CustomResourceDefinition admissionpolicies.admission.portcullis.dev')).to.equal(false);
    expect(chart.has('NetworkPolicy policy/portcullis-operator')).to.equal(false);
    expect(chart.has('PodDisruptionBudget policy/portcullis-operator')).to.equal(false);
    // The release's namespace reaches the RBAC subjects and the token guard's rules.
    expect(chart.get('ClusterRoleBinding portcullis-operator')!.subjects[0].namespace).to.equal('policy');
    const guard = chart.get('ValidatingAdmissionPolicy portcullis-operator-token-guard')!;
    expect(guard.spec.matchConditions[0].expression).to.contain("'system:serviceaccount:policy:portcullis-operator'");
    expect(JSON.stringify(guard.spec.validations)).to.contain("w.clientConfig.service.namespace == 'policy'");
  });

  it('handlerModules: the folder of handler modules and their budget as flags, with the image that holds them', async function () {
    const chart = await render('image.repository=registry.example.com/portcullis-with-handlers', 'image.tag=0.1.0', 'handlerModules.folder=/app/handlers', 'handlerModules.budget=1500ms');
    const container = chart.get('Deployment portcullis-system/portcullis-operator')!.spec.template.spec.containers[0];
    expect(container.image).to.equal('registry.example.com/portcullis-with-handlers:0.1.0');
    expect(container.args).to.include.members(['--handler-modules=/app/handlers', '--handler-budget=1500ms']);
    const off = await render();
    const defaults = off.get('Deployment portcullis-system/portcullis-operator')!.spec.template.spec.containers[0];
    expect(defaults.args.filter((a: string) => a.startsWith('--handler-'))).to.deep.equal([]);
    // With a folder, exactly the lookups' grants of deploy/optional/handler-module-lookups.yaml; none without.
    const optional = parse(fs.readFileSync(path.join(ROOT, 'deploy/optional/handler-module-lookups.yaml'), 'utf8'));
    const added = [...chart.keys()].filter((k) => !off.has(k)).sort();
    expect(added).to.deep.equal([...optional.keys()].sort());
    for (const k of added) expect(isDeepStrictEqual(chart.get(k), optional.get(k)), `${k} differs from deploy/optional's`).to.equal(true);
  });

  it('handlerBackends: the backends handlers may call as one flag; none by default', async function () {
    const chart = await render('handlerBackends[0]=https://image-review.security.svc:8443/review', 'handlerBackends[1]=https://10.0.0.5');
    const container = chart.get('Deployment portcullis-system/portcullis-operator')!.spec.template.spec.containers[0];
    expect(container.args).to.include('--handler-backends=https://image-review.security.svc:8443/review,https://10.0.0.5');
    const defaults = (await render()).get('Deployment portcullis-system/portcullis-operator')!.spec.template.spec.containers[0];
    expect(defaults.args.filter((a: string) => a.startsWith('--handler-backends'))).to.deep.equal([]);
  });

  it('nativeEnforcement.enabled: the flag, and exactly the grants of deploy/optional/native-enforcement.yaml', async function () {
    const off = await render();
    const on = await render('nativeEnforcement.enabled=true');
    const args = (chart: Map<string, Manifest>) => chart.get('Deployment portcullis-system/portcullis-operator')!.spec.template.spec.containers[0].args as string[];
    expect(args(off)).to.not.include('--native-enforcement');
    expect(args(on)).to.include('--native-enforcement');
    const optional = parse(fs.readFileSync(path.join(ROOT, 'deploy/optional/native-enforcement.yaml'), 'utf8'));
    const added = [...on.keys()].filter((k) => !off.has(k)).sort();
    expect(added).to.deep.equal([...optional.keys()].sort());
    for (const k of added) expect(isDeepStrictEqual(on.get(k), optional.get(k)), `${k} differs from deploy/optional's`).to.equal(true);
  });

  it("follows the audit's values: its flags, the report CRDs, the RBAC", async function () {
    const args = (chart: Map<string, Manifest>) => chart.get('Deployment portcullis-system/portcullis-operator')!.spec.template.spec.containers[0].args;
    const groups = (chart: Map<string, Manifest>, role: string) => (chart.get(`ClusterRole ${role}`)?.rules ?? []).flatMap((r: { apiGroups?: string[] }) => r.apiGroups ?? []);
    const crds = (chart: Map<string, Manifest>) => [...chart.keys()].filter((k) => /^CustomResourceDefinition .*(openreports|wgpolicyk8s)\.io$/.test(k)).sort();
    const AUDIT_ROLES = ['ClusterRole portcullis-operator-audit', 'ClusterRoleBinding portcullis-operator-audit', 'ClusterRole portcullis-audit-default'];

    // Defaults: the operator's own (no flag), OpenReports' CRDs and grants, no wgpolicyk8s.io.
    const defaults = await render();
    expect(args(defaults)).to.deep.equal(['--mode=cluster']);
    expect(crds(defaults)).to.deep.equal(['CustomResourceDefinition clusterreports.openreports.io', 'CustomResourceDefinition reports.openreports.io']);
    expect(groups(defaults, 'portcullis-operator')).to.include('openreports.io').and.not.include('wgpolicyk8s.io');
    for (const k of AUDIT_ROLES) expect(defaults.has(k), k).to.equal(true);
    expect(defaults.get('ClusterRole portcullis-audit-default')?.metadata?.labels).to.include({ 'admission.portcullis.dev/aggregate-to-audit': 'true' });

    const policyReports = await render('audit.interval=5m', 'audit.reports.policyReports=true');
    expect(args(policyReports)).to.deep.equal(['--mode=cluster', '--audit-interval=5m', '--policy-reports']);
    expect(crds(policyReports)).to.deep.equal([
      'CustomResourceDefinition clusterpolicyreports.wgpolicyk8s.io',
      'CustomResourceDefinition clusterreports.openreports.io',
      'CustomResourceDefinition policyreports.wgpolicyk8s.io',
      'CustomResourceDefinition reports.openreports.io',
    ]);
    expect(groups(policyReports, 'portcullis-operator')).to.include.members(['openreports.io', 'wgpolicyk8s.io']);
    expect(groups(policyReports, 'portcullis-reports-view')).to.deep.equal(['openreports.io', 'wgpolicyk8s.io']);

    // Another tool installs the CRDs: none here, whatever else is asked.
    expect(crds(await render('audit.reports.installCRDs=false', 'audit.reports.policyReports=true'))).to.deep.equal([]);

    // No audit: the flag, and none of its grants.
    const off = await render('audit.enabled=false');
    expect(args(off)).to.deep.equal(['--mode=cluster', '--audit=false']);
    expect(groups(off, 'portcullis-operator')).to.not.include('openreports.io');
    for (const k of AUDIT_ROLES) expect(off.has(k), k).to.equal(false);
  });

  it('renders what the API server accepts (server-side dry run)', async function () {
    // With every CRD it can install: the wgpolicyk8s.io ones too.
    const result = await helm(['template', 'portcullis', CHART, '--namespace', 'portcullis-system', '--set', 'audit.reports.policyReports=true']);
    const applied = await kubectl(['apply', '--server-side', '--force-conflicts', '--dry-run=server', '-f', '-'], result.stdout);
    expect(applied.code, applied.stderr).to.equal(0);
    expect(applied.stdout).to.contain('deployment.apps/portcullis-operator serverside-applied (server dry run)');
  });
});
