/**
 * DenyEscalatingExec: cases from upstream's plugin/pkg/admission/exec/admission_test.go (removed
 * in 1.22: TestAdmission's privileged, hostPID, hostIPC and plain pods, under DenyEscalatingExec
 * and DenyExecOnPrivileged), in upstream's words; then what a suite sees of CONNECT: rules on
 * pods/exec, pods/attach and pods/portforward accepted and registered, the handler reached through
 * the registry, and CEL validations given the request as the API server sends it.
 */
import { expect } from 'chai';
import { denyEscalatingExec, type DenyEscalatingExecConfig } from '../../../src/handlers/deny-escalating-exec.ts';
import { LookupNotReady, type ClusterView } from '../../../src/handlers/handler.ts';
import type { AdmissionRequest } from '../../../src/api/admission-review.ts';
import type { AdmissionSuite, WebhookSpec } from '../../../src/api/types.ts';
import { compileSuite } from '../../../src/registry/compile.ts';
import { ruleMatches } from '../../../src/registry/match.ts';
import { webhookConfigurations } from '../../../src/desired/objects.ts';
import { suiteErrors } from '../../fixtures/patch.ts';
import { viewOf } from '../../fixtures/views.ts';
import type { OperatorConfig } from '../../../src/config.ts';

const OPTIONS_KINDS: Record<string, string> = { exec: 'PodExecOptions', attach: 'PodAttachOptions', portforward: 'PodPortForwardOptions' };

/**
 * A CONNECT as the API server sends it (apiserver endpoints/handlers ConnectResource): the kind is
 * the options' kind, `object` the options (from the query), no oldObject, no options.
 */
function connect(subResource: string, name = 'web', namespace = 'team-a', object: Record<string, unknown> = { command: ['ls'], stdout: true, stderr: true }): AdmissionRequest {
  const kind = { group: '', version: 'v1', kind: OPTIONS_KINDS[subResource] ?? 'Unknown' };
  const resource = { group: '', version: 'v1', resource: 'pods' };
  return {
    uid: '6c1f8f0e-2b0a-4c8e-9a55-0f3b1d2e4a10',
    kind,
    resource,
    subResource,
    requestKind: kind,
    requestResource: resource,
    requestSubResource: subResource,
    name,
    namespace,
    operation: 'CONNECT',
    userInfo: { username: 'admin', groups: ['system:masters', 'system:authenticated'] },
    object: { kind: kind.kind, apiVersion: 'v1', ...object },
    oldObject: null,
    dryRun: false,
  };
}

const container = (privileged?: boolean) => ({ name: 'c', image: 'busybox', ...(privileged === undefined ? {} : { securityContext: { privileged } }) });
const podNamed = (name: string, spec: Record<string, unknown>, namespace = 'team-a') => ({ apiVersion: 'v1', kind: 'Pod', metadata: { name, namespace }, spec: { containers: [container()], ...spec } });

const PODS = [
  podNamed('plain', {}),
  podNamed('unprivileged', { containers: [container(false)] }),
  podNamed('privileged', { containers: [container(), container(true)] }),
  podNamed('privileged-init', { initContainers: [container(true)] }),
  podNamed('privileged-ephemeral', { ephemeralContainers: [container(true)] }),
  podNamed('host-pid', { hostPID: true }),
  podNamed('host-ipc', { hostIPC: true }),
  podNamed('host-network', { hostNetwork: true }),
  podNamed('everything', { hostNetwork: true, hostPID: true, hostIPC: true, containers: [container(true)] }),
  // The same name in another namespace: only the request's namespace counts.
  podNamed('plain-elsewhere', {}, 'team-b'),
  podNamed('web', { hostPID: true }, 'team-b'),
];
const VIEW = viewOf({ lookups: { Pod: PODS } });

function parsed(config: Record<string, unknown> = {}): DenyEscalatingExecConfig {
  const result = denyEscalatingExec.parseConfig(config);
  expect(result.errors).to.deep.equal([]);
  return result.config;
}

const forbidden = (name: string, why: string) => ({ allowed: false, code: 403, reason: 'Forbidden', message: `pods "${name}" is forbidden: ${why}` });
const PRIVILEGED = 'cannot exec into or attach to a privileged container';
const HOST_PID = 'cannot exec into or attach to a container using host pid';
const HOST_IPC = 'cannot exec into or attach to a container using host ipc';
const HOST_NETWORK = 'cannot exec into or attach to a container using host network';

describe('handlers: DenyEscalatingExec', function () {
  describe('upstream TestAdmission, as DenyEscalatingExec (the defaults)', function () {
    const cases: [string, string | undefined][] = [
      ['plain', undefined],
      ['unprivileged', undefined],
      ['privileged', PRIVILEGED],
      ['privileged-init', PRIVILEGED],
      ['privileged-ephemeral', PRIVILEGED],
      ['host-pid', HOST_PID],
      ['host-ipc', HOST_IPC],
      // Neither plugin turned hostNetwork on.
      ['host-network', undefined],
      // upstream's order: host network, host pid, host ipc, privileged.
      ['everything', HOST_PID],
    ];
    for (const [name, why] of cases) {
      for (const sub of ['exec', 'attach']) {
        it(`${sub} into ${name}: ${why ?? 'allowed'}`, function () {
          const decision = denyEscalatingExec.validate!(connect(sub, name), parsed(), VIEW);
          expect(decision).to.deep.equal(why ? forbidden(name, why) : { allowed: true });
        });
      }
    }
  });

  it('as DenyExecOnPrivileged ({hostPID: false, hostIPC: false}): only privileged containers; hostNetwork when turned on', function () {
    const onPrivileged = parsed({ hostPID: false, hostIPC: false });
    expect(denyEscalatingExec.validate!(connect('exec', 'host-pid'), onPrivileged, VIEW)).to.deep.equal({ allowed: true });
    expect(denyEscalatingExec.validate!(connect('exec', 'host-ipc'), onPrivileged, VIEW)).to.deep.equal({ allowed: true });
    expect(denyEscalatingExec.validate!(connect('exec', 'everything'), onPrivileged, VIEW)).to.deep.equal(forbidden('everything', PRIVILEGED));
    const all = parsed({ hostNetwork: true });
    expect(denyEscalatingExec.validate!(connect('attach', 'host-network'), all, VIEW)).to.deep.equal(forbidden('host-network', HOST_NETWORK));
    expect(denyEscalatingExec.validate!(connect('exec', 'everything'), all, VIEW)).to.deep.equal(forbidden('everything', HOST_NETWORK));
    expect(denyEscalatingExec.validate!(connect('exec', 'privileged'), parsed({ privileged: false }), VIEW)).to.deep.equal({ allowed: true });
  });

  it('judges only CONNECT of pods/exec and pods/attach: portforward, other subresources and operations are left alone', function () {
    const config = parsed();
    expect(denyEscalatingExec.validate!(connect('portforward', 'privileged', 'team-a', { ports: [8080] }), config, VIEW)).to.deep.equal({ allowed: true });
    expect(denyEscalatingExec.validate!(connect('proxy', 'privileged', 'team-a', {}), config, VIEW)).to.deep.equal({ allowed: true });
    const createPod = { ...connect('exec', 'privileged'), operation: 'CREATE' as const, subResource: undefined, kind: { group: '', version: 'v1', kind: 'Pod' }, object: PODS[2]! };
    expect(denyEscalatingExec.validate!(createPod, config, VIEW)).to.deep.equal({ allowed: true });
    // upstream Handles(Connect) alone: the subresource is not enough.
    expect(denyEscalatingExec.validate!({ ...connect('exec', 'privileged'), operation: 'UPDATE' }, config, VIEW)).to.deep.equal({ allowed: true });
    const otherGroup = { ...connect('exec', 'privileged'), resource: { group: 'example.com', version: 'v1', resource: 'pods' } };
    expect(denyEscalatingExec.validate!(otherGroup, config, VIEW)).to.deep.equal({ allowed: true });
  });

  it("reads the Pod of the request's namespace only, and refuses one the cache does not hold as upstream's failed GET", function () {
    const config = parsed();
    // team-b's "web" uses host pid; team-a has no "web".
    expect(denyEscalatingExec.validate!(connect('exec', 'web', 'team-a'), config, VIEW)).to.deep.equal(forbidden('web', 'pods "web" not found'));
    expect(denyEscalatingExec.validate!(connect('exec', 'web', 'team-b'), config, VIEW)).to.deep.equal(forbidden('web', HOST_PID));
    expect(denyEscalatingExec.validate!(connect('exec', 'plain-elsewhere', 'team-b'), config, VIEW)).to.deep.equal({ allowed: true });
  });

  it('refuses a config of the wrong shape on apply, naming the field', function () {
    expect(denyEscalatingExec.parseConfig({ privileged: 'yes', hostPid: true }).errors).to.deep.equal([
      { field: 'hostPid', message: 'unknown field; DenyEscalatingExec takes privileged, hostPID, hostIPC, hostNetwork' },
      { field: 'privileged', message: 'must be true or false' },
    ]);
    expect(parsed()).to.deep.equal({ privileged: true, hostPID: true, hostIPC: true, hostNetwork: false });
  });
});

describe('CONNECT in suites', function () {
  const connectRule = { operations: ['CONNECT' as const], apiGroups: [''], apiVersions: ['v1'], resources: ['pods/exec', 'pods/attach', 'pods/portforward'] };
  const suite = (webhook: Partial<WebhookSpec> & Pick<WebhookSpec, 'type' | 'rules'>): AdmissionSuite => ({
    apiVersion: 'admission.portcullis.dev/v1alpha1',
    kind: 'AdmissionSuite',
    metadata: { name: 'connect', uid: 'u', generation: 1 },
    spec: { webhooks: [{ name: 'w', ...webhook }] },
  });

  it('rules on CONNECT of pods/exec, pods/attach and pods/portforward are accepted and registered as written', function () {
    expect(suiteErrors({ type: 'Validating', rules: [connectRule], handler: { name: 'DenyEscalatingExec' } })).to.deep.equal([]);
    expect(suiteErrors({ type: 'Validating', rules: [connectRule], validations: [{ expression: 'true' }] } as never)).to.deep.equal([]);
    const config = { namespace: 'portcullis-system', mode: 'cluster', servingPort: 8443 } as OperatorConfig;
    const configuration = webhookConfigurations(suite({ type: 'Validating', rules: [connectRule], handler: { name: 'DenyEscalatingExec' } }), config, 'CA').get('Validating')!;
    expect((configuration.webhooks as { rules: unknown }[])[0]!.rules).to.deep.equal([connectRule]);
    // The rule matches the CONNECTs the API server sends, and not the Pod itself or other operations.
    for (const sub of ['exec', 'attach', 'portforward']) expect(ruleMatches(connectRule, connect(sub)), sub).to.equal(true);
    expect(ruleMatches(connectRule, connect('proxy'))).to.equal(false);
    expect(ruleMatches(connectRule, { ...connect('exec'), operation: 'CREATE' })).to.equal(false);
    expect(ruleMatches(connectRule, { ...connect('exec'), subResource: undefined })).to.equal(false);
  });

  it('DenyEscalatingExec on any other resource is refused on apply', function () {
    const errors = suiteErrors({ type: 'Validating', rules: [{ ...connectRule, resources: ['services/proxy'] }], handler: { name: 'DenyEscalatingExec' } });
    expect(errors).to.deep.equal([{ field: 'spec.webhooks[0].rules[0]', message: 'handler DenyEscalatingExec does not serve core/services/proxy' }]);
  });

  it('the handler answers through the registry, and waits for the Pod cache as every lookup handler', async function () {
    const compiled = compileSuite(suite({ type: 'Validating', rules: [connectRule], handler: { name: 'DenyEscalatingExec' } }), { view: VIEW });
    expect(compiled.errors).to.deep.equal([]);
    const webhook = compiled.webhooks.get('w')!;
    expect(webhook.lookups).to.deep.equal(['Pod']);
    expect(await webhook.admit(connect('exec', 'privileged'))).to.deep.equal(forbidden('privileged', PRIVILEGED));
    expect(await webhook.admit(connect('exec', 'plain'))).to.deep.equal({ allowed: true });
    const unsynced: ClusterView = {
      ...VIEW,
      list: () => {
        throw new LookupNotReady('Pod');
      },
    };
    const waiting = compileSuite(suite({ type: 'Validating', rules: [connectRule], handler: { name: 'DenyEscalatingExec' } }), { view: unsynced }).webhooks.get('w')!;
    expect(await waiting.admit(connect('exec', 'plain'))).to.include({ allowed: false, message: 'pods "plain" is forbidden: not yet ready to handle request' });
  });

  it('CEL validations see CONNECT as VAP does: the operation, the subresource, the options as object, no oldObject', async function () {
    const validations = [
      // Each check alone, so a wrong binding names itself.
      { expression: "request.operation == 'CONNECT'", message: 'operation' },
      { expression: "request.kind.kind == 'PodExecOptions' && object.kind == 'PodExecOptions'", message: 'kind' },
      { expression: "has(request.subResource) && request.subResource == 'exec'", message: 'subResource' },
      { expression: 'oldObject == null', message: 'oldObject' },
      { expression: "!object.command.exists(c, c == 'rm')", message: 'no rm' },
      { expression: "request.name != 'prod-db'", messageExpression: "'no exec into ' + request.name + ' (' + request.subResource + ')'" },
    ];
    const compiled = compileSuite(suite({ type: 'Validating', rules: [connectRule], validations } as never));
    expect(compiled.errors).to.deep.equal([]);
    const webhook = compiled.webhooks.get('w')!;
    expect(await webhook.admit(connect('exec', 'web'))).to.deep.equal({ allowed: true });
    expect(await webhook.admit(connect('exec', 'web', 'team-a', { command: ['rm', '-rf', '/'] }))).to.include({ allowed: false, message: 'no rm' });
    expect(await webhook.admit(connect('exec', 'prod-db'))).to.include({ allowed: false, message: 'no exec into prod-db (exec)' });
    // Each binding can fail: an attach is not an exec (kind and subResource), a non-CONNECT is not judged alike.
    const attach = await webhook.admit(connect('attach', 'web', 'team-a', { stdin: true, command: [] }));
    expect(attach).to.include({ allowed: false, message: 'kind' });
    const withOld = await webhook.admit({ ...connect('exec', 'web'), oldObject: { kind: 'PodExecOptions' } });
    expect(withOld).to.include({ allowed: false, message: 'oldObject' });
  });
});
