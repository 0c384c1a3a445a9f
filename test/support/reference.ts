/**
 * The oracle of the plugin differential tests: a second control plane (its own etcd and data)
 * whose API server runs the in-tree admission plugins that Portcullis re-creates as built-in
 * handlers, while the test run's own API server (cluster.ts) has them turned off and is served
 * by Portcullis. Started on first use (most files never need it) and stopped by the root hooks.
 * The plugins that act on every Pod whatever its namespace or labels run on a third control plane
 * of their own (unscopedReferenceCluster), so that they leave the other differentials' Pods alone.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as k8s from '@kubernetes/client-node';
import { DEFAULT_DISABLED_PLUGINS, startControlPlane, type ControlPlane } from '../../src/local/controlplane.ts';
import { connect, type Kube } from '../../src/apiserver/client.ts';
/** As cluster.ts' kubectl answers (not imported from there: cluster.ts imports this file). */
interface CommandResult {
  code: number;
  stdout: string;
  stderr: string;
}

/** In-tree plugins that built-in handlers re-create and that are on by default in kube-apiserver. */
export const RECREATED_DEFAULT_ON = [
  'PodSecurity',
  'Priority',
  'RuntimeClass',
  'DefaultStorageClass',
  'DefaultIngressClass',
  'PersistentVolumeClaimResize',
  'StorageObjectInUseProtection',
  'PodTopologyLabels',
  'PodResizeValidator',
  'CertificateApproval',
  'CertificateSigning',
  'CertificateSubjectRestriction',
];
/** In-tree plugins that built-in handlers re-create and that kube-apiserver leaves off unless asked. */
export const RECREATED_DEFAULT_OFF = ['PodTolerationRestriction', 'LimitPodHardAntiAffinityTopology', 'ExtendedResourceToleration', 'OwnerReferencesPermissionEnforcement'];

/** What the test run's own API server turns off: the defaults of local mode plus every plugin we re-create. */
export const PORTCULLIS_SIDE_DISABLED = [...DEFAULT_DISABLED_PLUGINS, ...RECREATED_DEFAULT_ON];

/**
 * The in-tree PodSecurity's exemptions on the reference (its defaults stay privileged:latest, as
 * with no configuration): a differential test gives a suite the same ones.
 */
export const REFERENCE_POD_SECURITY_EXEMPTIONS = {
  usernames: ['psa-exempt-user'],
  namespaces: ['psa-diff-exempt'],
  runtimeClasses: ['psa-exempt-runtime'],
};

/**
 * PodTolerationRestriction's cluster defaults on the reference (its admission configuration
 * file): the toleration of upstream's test cases. Pods in namespaces without the
 * defaultTolerations annotation get it there, so a suite comparing with the reference gives its
 * PodTolerationRestriction handler the same `default`. No cluster whitelist: it would refuse
 * every tolerating Pod of every other differential.
 */
export const REFERENCE_POD_TOLERATION_DEFAULTS = [{ key: 'testKey', operator: 'Equal', value: 'testValue', effect: 'NoSchedule' }];

/**
 * In-tree plugins that built-in handlers re-create and that act on every object of their kind
 * (no namespace or label keeps them off a Pod): on the reference they would change the answers of
 * every other differential's Pods, so they run on a reference of their own (the unscoped one).
 * AlwaysPullImages, PodNodeSelector and DenyServiceExternalIPs are off unless asked; LimitRanger
 * and DefaultTolerationSeconds are on by default but off in local mode.
 */
export const RECREATED_UNSCOPED = ['LimitRanger', 'AlwaysPullImages', 'PodNodeSelector', 'DefaultTolerationSeconds', 'DenyServiceExternalIPs'];

/**
 * PodNodeSelector's configuration on the unscoped reference (upstream's clusterNodeSelectors): the
 * cluster default of upstream's cases, and the per-namespace whitelists of its two whitelist cases.
 * A suite comparing with it gives its PodNodeSelector handler the same, as `config`.
 */
export const REFERENCE_NODE_SELECTORS = {
  clusterDefaultNodeSelector: 'infra = false',
  namespaceAllowlists: { 'pns-9': 'env=dev, infra=false, color=blue', 'pns-10': 'env=dev, infra=true, color=blue' },
};

/** Writes an AdmissionConfiguration with these plugins' entries; its path. */
export function writeAdmissionFile(plugins: { name: string; configuration: Record<string, unknown> }[]): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-reference-admission-'));
  const file = path.join(dir, 'admission.json');
  fs.writeFileSync(file, JSON.stringify({ apiVersion: 'apiserver.config.k8s.io/v1', kind: 'AdmissionConfiguration', plugins }));
  return file;
}

/** The AdmissionConfiguration the reference reads: each configured plugin's entry. */
function writeAdmissionConfig(): string {
  const plugins = [
    {
      name: 'PodSecurity',
      configuration: {
        apiVersion: 'pod-security.admission.config.k8s.io/v1',
        kind: 'PodSecurityConfiguration',
        defaults: { enforce: 'privileged', 'enforce-version': 'latest', audit: 'privileged', 'audit-version': 'latest', warn: 'privileged', 'warn-version': 'latest' },
        exemptions: REFERENCE_POD_SECURITY_EXEMPTIONS,
      },
    },
    {
      name: 'PodTolerationRestriction',
      configuration: { apiVersion: 'podtolerationrestriction.admission.k8s.io/v1alpha1', kind: 'Configuration', default: REFERENCE_POD_TOLERATION_DEFAULTS },
    },
  ];
  return writeAdmissionFile(plugins);
}

/** The unscoped reference's: PodNodeSelector reads its map of selectors (a namespace's name, or clusterDefaultNodeSelector). */
function writeUnscopedAdmissionConfig(): string {
  const { clusterDefaultNodeSelector, namespaceAllowlists } = REFERENCE_NODE_SELECTORS;
  return writeAdmissionFile([{ name: 'PodNodeSelector', configuration: { podNodeSelectorPluginConfig: { clusterDefaultNodeSelector, ...namespaceAllowlists } } }]);
}

export interface ReferenceCluster {
  controlPlane: ControlPlane;
  kubeConfig: k8s.KubeConfig;
  kube: Kube;
  kubectl(args: string[], input?: string): Promise<CommandResult>;
}

let starting: Promise<ReferenceCluster> | undefined;
let startingUnscoped: Promise<ReferenceCluster> | undefined;

/** A reference control plane of these options (a test that needs a plugin configured its own way starts and stops one). */
export async function startReference(options: Parameters<typeof startControlPlane>[0]): Promise<ReferenceCluster> {
  const controlPlane = await startControlPlane(options);
  const kubeConfig = new k8s.KubeConfig();
  kubeConfig.loadFromFile(controlPlane.kubeconfigPath);
  const kubectl = (args: string[], input?: string) =>
    new Promise<CommandResult>((resolve) => {
      const child = execFile(controlPlane.binaries.kubectl, ['--kubeconfig', controlPlane.kubeconfigPath, ...args], { timeout: 60_000 }, (err, stdout, stderr) => {
        resolve({ code: err ? ((err as { code?: number }).code ?? 1) : 0, stdout, stderr });
      });
      if (input !== undefined) child.stdin!.end(input);
    });
  return { controlPlane, kubeConfig, kube: connect(kubeConfig), kubectl };
}

/**
 * The reference API server, started once per run. Its disabled list is local mode's (LimitRanger
 * and DefaultTolerationSeconds stay off here: they are compared on the unscoped reference); every
 * plugin above is on.
 */
export function referenceCluster(): Promise<ReferenceCluster> {
  starting ??= startReference({
    disableAdmissionPlugins: DEFAULT_DISABLED_PLUGINS,
    enableAdmissionPlugins: RECREATED_DEFAULT_OFF,
    admissionConfigFile: writeAdmissionConfig(),
  });
  return starting;
}

/**
 * The unscoped reference, started once per run: the plugins of RECREATED_UNSCOPED on, and every
 * other plugin we re-create off (as on the run's own API server), so that what a Pod gets there
 * is these plugins' doing alone.
 */
export function unscopedReferenceCluster(): Promise<ReferenceCluster> {
  startingUnscoped ??= startReference({
    // ServiceAccount off as in local mode (and on the run's own API server).
    disableAdmissionPlugins: ['ServiceAccount', ...RECREATED_DEFAULT_ON],
    enableAdmissionPlugins: RECREATED_UNSCOPED,
    admissionConfigFile: writeUnscopedAdmissionConfig(),
  });
  return startingUnscoped;
}

export async function stopReferenceCluster(): Promise<void> {
  const both = [starting, startingUnscoped];
  starting = startingUnscoped = undefined;
  for (const started of both) {
    const reference = await started?.catch(() => undefined);
    await reference?.controlPlane.stop();
  }
}
