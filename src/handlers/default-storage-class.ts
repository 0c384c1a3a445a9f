/**
 * DefaultStorageClass, after the in-tree admission plugin of that name: a PersistentVolumeClaim
 * created without a class (no spec.storageClassName, not even "", and no
 * volume.beta.kubernetes.io/storage-class annotation) gets the cluster's default StorageClass,
 * the one annotated storageclass.kubernetes.io/is-default-class (or its beta form) "true"; with
 * several, the newest, then the first by name. No default: the claim is left as it is.
 * StorageClasses come from the shared lookup cache.
 */
import { allowed, patched } from '../api/admission-review.ts';
import type { Handler } from './handler.ts';
import { ConfigReader, isPlainObject } from './config.ts';
import { metadataOf } from './pods.ts';
import { newestDefault } from './classes.ts';

export const BETA_STORAGE_CLASS_ANNOTATION = 'volume.beta.kubernetes.io/storage-class';
const DEFAULT_ANNOTATIONS = ['storageclass.kubernetes.io/is-default-class', 'storageclass.beta.kubernetes.io/is-default-class'];

export const isDefaultStorageClass = (annotations: Record<string, string>) => DEFAULT_ANNOTATIONS.some((key) => annotations[key] === 'true');

/** upstream's GetPersistentVolumeClaimClass: the beta annotation first, then spec.storageClassName, else "". */
export function claimClass(claim: unknown): string {
  const annotation = metadataOf(claim)?.annotations?.[BETA_STORAGE_CLASS_ANNOTATION];
  if (annotation !== undefined) return annotation;
  const spec = isPlainObject(claim) && isPlainObject(claim.spec) ? claim.spec : {};
  return typeof spec.storageClassName === 'string' ? spec.storageClassName : '';
}

export const defaultStorageClass: Handler<Record<string, never>> = {
  name: 'DefaultStorageClass',
  resources: [{ group: '', resource: 'persistentvolumeclaims' }],
  lookups: ['StorageClass'],
  parseConfig(config) {
    const read = new ConfigReader(config, 'DefaultStorageClass', []);
    return { config: {}, errors: read.errors };
  },
  mutate(request, _config, view) {
    if (request.operation !== 'CREATE' || request.subResource || request.resource.group !== '' || request.resource.resource !== 'persistentvolumeclaims') return allowed();
    const claim = request.object;
    if (!isPlainObject(claim)) return allowed();
    if (metadataOf(claim)?.annotations?.[BETA_STORAGE_CLASS_ANNOTATION] !== undefined) return allowed();
    const spec = isPlainObject(claim.spec) ? claim.spec : undefined;
    if (typeof spec?.storageClassName === 'string') return allowed();
    const found = newestDefault(view.list('StorageClass'), isDefaultStorageClass);
    if (!found) return allowed();
    return patched(spec ? [{ op: 'add', path: '/spec/storageClassName', value: found.metadata.name }] : [{ op: 'add', path: '/spec', value: { storageClassName: found.metadata.name } }]);
  },
};
