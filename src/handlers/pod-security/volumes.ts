/**
 * The restricted level's volume types (policy/check_restrictedVolumes.go): only configMap, csi,
 * downwardAPI, emptyDir, ephemeral, image, persistentVolumeClaim, projected and secret; it replaces
 * baseline's hostPath check. Pure; the frame is checks.ts'.
 */
import { ALLOWED, forbidden, joinQuote, pluralize, sortedSet, type Check, type CheckPod } from './checks.ts';

const ALLOWED_SOURCES = ['configMap', 'csi', 'downwardAPI', 'emptyDir', 'ephemeral', 'image', 'persistentVolumeClaim', 'projected', 'secret'];
/** The restricted sources in the order upstream names the first one a volume sets. */
const NAMED_SOURCES = [
  'hostPath',
  'gcePersistentDisk',
  'awsElasticBlockStore',
  'gitRepo',
  'nfs',
  'iscsi',
  'glusterfs',
  'rbd',
  'flexVolume',
  'cinder',
  'cephfs',
  'flocker',
  'fc',
  'azureFile',
  'vsphereVolume',
  'quobyte',
  'azureDisk',
  'photonPersistentDisk',
  'portworxVolume',
  'scaleIO',
  'storageos',
];

const restrictedVolumes1_0: CheckPod = (_meta, spec) => {
  const bad: string[] = [];
  const types: string[] = [];
  for (const volume of Array.isArray(spec.volumes) ? spec.volumes : []) {
    if (!volume || typeof volume !== 'object') continue;
    if (ALLOWED_SOURCES.some((source) => volume[source] != null)) continue;
    bad.push(String(volume.name ?? ''));
    types.push(NAMED_SOURCES.find((source) => volume[source] != null) ?? 'unknown');
  }
  if (!bad.length) return ALLOWED;
  const distinct = sortedSet(types);
  return forbidden(
    'restricted volume types',
    `${pluralize('volume', 'volumes', bad.length)} ${joinQuote(bad)} ${pluralize('uses', 'use', bad.length)} ${pluralize('restricted volume type', 'restricted volume types', distinct.length)} ${joinQuote(distinct)}`,
  );
};

export const VOLUME_CHECKS: Check[] = [{ id: 'restrictedVolumes', level: 'restricted', versions: [{ minimumVersion: 0, checkPod: restrictedVolumes1_0, overrideCheckIDs: ['hostPathVolumes'] }] }];
