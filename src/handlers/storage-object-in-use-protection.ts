/**
 * StorageObjectInUseProtection, after the in-tree admission plugin of that name: a
 * PersistentVolume, PersistentVolumeClaim or VolumeAttributesClass created without its protection
 * finalizer gets it (kubernetes.io/pv-protection, kubernetes.io/pvc-protection,
 * kubernetes.io/vac-protection), so the controllers can hold its deletion while it is in use.
 */
import { allowed, patched, type AdmissionRequest } from '../api/admission-review.ts';
import type { Handler } from './handler.ts';
import { ConfigReader, isPlainObject } from './config.ts';

const FINALIZERS: Record<string, string> = {
  '/persistentvolumes': 'kubernetes.io/pv-protection',
  '/persistentvolumeclaims': 'kubernetes.io/pvc-protection',
  'storage.k8s.io/volumeattributesclasses': 'kubernetes.io/vac-protection',
};

function finalizerFor(request: AdmissionRequest): string | undefined {
  return FINALIZERS[`${request.resource.group}/${request.resource.resource}`];
}

export const storageObjectInUseProtection: Handler<Record<string, never>> = {
  name: 'StorageObjectInUseProtection',
  resources: [
    { group: '', resource: 'persistentvolumes' },
    { group: '', resource: 'persistentvolumeclaims' },
    { group: 'storage.k8s.io', resource: 'volumeattributesclasses' },
  ],
  parseConfig(config) {
    const read = new ConfigReader(config, 'StorageObjectInUseProtection', []);
    return { config: {}, errors: read.errors };
  },
  mutate(request) {
    const finalizer = finalizerFor(request);
    if (!finalizer || request.operation !== 'CREATE' || request.subResource || !isPlainObject(request.object) || !isPlainObject(request.object.metadata)) return allowed();
    const finalizers = request.object.metadata.finalizers;
    if (!Array.isArray(finalizers)) return patched([{ op: 'add', path: '/metadata/finalizers', value: [finalizer] }]);
    if (finalizers.includes(finalizer)) return allowed();
    return patched([{ op: 'add', path: '/metadata/finalizers/-', value: finalizer }]);
  },
};
