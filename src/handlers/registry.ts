/** The built-in handlers by name. A new handler is one file and one line here. */
import { alwaysPullImages } from './always-pull-images.ts';
import { defaultIngressClass } from './default-ingress-class.ts';
import { defaultResources } from './default-resources.ts';
import { defaultStorageClass } from './default-storage-class.ts';
import { extendedResourceToleration } from './extended-resource-toleration.ts';
import { limitPodHardAntiAffinityTopology } from './limit-pod-hard-anti-affinity-topology.ts';
import { persistentVolumeClaimResize } from './persistent-volume-claim-resize.ts';
import { podTolerationRestriction } from './pod-toleration-restriction.ts';
import { priority } from './priority.ts';
import { runtimeClass } from './runtime-class.ts';
import { storageObjectInUseProtection } from './storage-object-in-use-protection.ts';
import { defaultTolerationSeconds } from './default-toleration-seconds.ts';
import { denyServiceExternalIPs } from './deny-service-external-ips.ts';
import { denyEscalatingExec } from './deny-escalating-exec.ts';
import { eventRateLimit } from './event-rate-limit.ts';
import { certificateApproval } from './certificate-approval.ts';
import { certificateSigning } from './certificate-signing.ts';
import { certificateSubjectRestriction } from './certificate-subject-restriction.ts';
import { imagePolicyWebhook } from './image-policy-webhook.ts';
import type { Handler } from './handler.ts';
import { customHandler } from './module-handlers.ts';
import { imageRegistryAllowlist } from './image-registry-allowlist.ts';
import { namespaceProtection } from './namespace-protection.ts';
import { ownerReferencesPermissionEnforcement } from './owner-references-permission-enforcement.ts';
import { podNodeSelector } from './pod-node-selector.ts';
import { podSecurity } from './pod-security.ts';
import { podTopologyLabels } from './pod-topology-labels.ts';
import { podResizeValidator } from './pod-resize-validator.ts';
import { requiredLabels } from './required-labels.ts';

const HANDLERS: Handler<any>[] = [
  alwaysPullImages,
  defaultTolerationSeconds,
  namespaceProtection,
  denyServiceExternalIPs,
  denyEscalatingExec,
  imageRegistryAllowlist,
  defaultResources,
  podNodeSelector,
  requiredLabels,
  podSecurity,
  defaultStorageClass,
  defaultIngressClass,
  persistentVolumeClaimResize,
  storageObjectInUseProtection,
  priority,
  extendedResourceToleration,
  limitPodHardAntiAffinityTopology,
  podTolerationRestriction,
  runtimeClass,
  ownerReferencesPermissionEnforcement,
  podTopologyLabels,
  podResizeValidator,
  eventRateLimit,
  certificateApproval,
  certificateSigning,
  certificateSubjectRestriction,
  imagePolicyWebhook as Handler<any>, // answers with a Promise: it calls its backend
];

const byName = new Map(HANDLERS.map((handler) => [handler.name, handler]));

/** A built-in, else a handler module's (src/handlers/module-handlers.ts: domain-qualified names, empty unless --handler-modules). */
export function findHandler(name: string): Handler<any> | undefined {
  return byName.get(name) ?? customHandler(name);
}
