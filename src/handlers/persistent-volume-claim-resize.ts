/**
 * PersistentVolumeClaimResize, after the in-tree admission plugin of that name: an UPDATE that
 * grows a PersistentVolumeClaim's storage request is refused unless the claim was Bound and its
 * StorageClass (the same before and after, named by the beta annotation or
 * spec.storageClassName) has allowVolumeExpansion: true. Shrinking or keeping the size is left to
 * the API server's validation. StorageClasses come from the shared lookup cache.
 */
import { allowed, type AdmissionRequest } from '../api/admission-review.ts';
import type { ClusterView, Handler } from './handler.ts';
import { ConfigReader, isPlainObject } from './config.ts';
import { compare, parseQuantity, type Quantity } from '../kubernetes/quantity.ts';
import { byName } from './classes.ts';
import { claimClass } from './default-storage-class.ts';
import { forbidden } from './errors.ts';

const ZERO: Quantity = { num: 0n, den: 1n };

function storageRequest(claim: unknown): Quantity {
  const spec = isPlainObject(claim) && isPlainObject(claim.spec) ? claim.spec : {};
  const requests = isPlainObject(spec.resources) && isPlainObject(spec.resources.requests) ? spec.resources.requests : {};
  return (typeof requests.storage === 'string' && parseQuantity(requests.storage)) || ZERO;
}

function allowResize(request: AdmissionRequest, view: ClusterView): boolean {
  const now = claimClass(request.object);
  const before = claimClass(request.oldObject);
  if (now === '' || before === '' || now !== before) return false;
  return byName(view.list('StorageClass'), now)?.allowVolumeExpansion === true;
}

export const persistentVolumeClaimResize: Handler<Record<string, never>> = {
  name: 'PersistentVolumeClaimResize',
  resources: [{ group: '', resource: 'persistentvolumeclaims' }],
  lookups: ['StorageClass'],
  parseConfig(config) {
    const read = new ConfigReader(config, 'PersistentVolumeClaimResize', []);
    return { config: {}, errors: read.errors };
  },
  validate(request, _config, view) {
    if (request.operation !== 'UPDATE' || request.subResource || request.resource.group !== '' || request.resource.resource !== 'persistentvolumeclaims') return allowed();
    if (!isPlainObject(request.object) || !isPlainObject(request.oldObject)) return allowed();
    if (compare(storageRequest(request.object), storageRequest(request.oldObject)) <= 0) return allowed();
    const phase = isPlainObject(request.oldObject.status) ? request.oldObject.status.phase : undefined;
    if (phase !== 'Bound') return forbidden(request, 'Only bound persistent volume claims can be expanded');
    if (!allowResize(request, view)) {
      return forbidden(request, 'only dynamically provisioned pvc can be resized and the storageclass that provisions the pvc must support resize');
    }
    return allowed();
  },
};
