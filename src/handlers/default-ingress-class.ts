/**
 * DefaultIngressClass, after the in-tree admission plugin of that name: an Ingress created with
 * no spec.ingressClassName and no kubernetes.io/ingress.class annotation gets the cluster's
 * default IngressClass (annotated ingressclass.kubernetes.io/is-default-class "true"; with
 * several, the newest, then the first by name). No default: left as it is. IngressClasses come
 * from the shared lookup cache.
 */
import { allowed, patched } from '../api/admission-review.ts';
import type { Handler } from './handler.ts';
import { ConfigReader, isPlainObject } from './config.ts';
import { metadataOf } from './pods.ts';
import { newestDefault } from './classes.ts';

export const INGRESS_CLASS_ANNOTATION = 'kubernetes.io/ingress.class';
const DEFAULT_ANNOTATION = 'ingressclass.kubernetes.io/is-default-class';

export const defaultIngressClass: Handler<Record<string, never>> = {
  name: 'DefaultIngressClass',
  resources: [{ group: 'networking.k8s.io', resource: 'ingresses' }],
  lookups: ['IngressClass'],
  parseConfig(config) {
    const read = new ConfigReader(config, 'DefaultIngressClass', []);
    return { config: {}, errors: read.errors };
  },
  mutate(request, _config, view) {
    if (request.operation !== 'CREATE' || request.subResource || request.resource.group !== 'networking.k8s.io' || request.resource.resource !== 'ingresses') return allowed();
    const ingress = request.object;
    if (!isPlainObject(ingress)) return allowed();
    const spec = isPlainObject(ingress.spec) ? ingress.spec : undefined;
    if (spec?.ingressClassName !== undefined && spec?.ingressClassName !== null) return allowed();
    if (metadataOf(ingress)?.annotations?.[INGRESS_CLASS_ANNOTATION] !== undefined) return allowed();
    const found = newestDefault(view.list('IngressClass'), (annotations) => annotations[DEFAULT_ANNOTATION] === 'true');
    if (!found) return allowed();
    return patched(spec ? [{ op: 'add', path: '/spec/ingressClassName', value: found.metadata.name }] : [{ op: 'add', path: '/spec', value: { ingressClassName: found.metadata.name } }]);
  },
};
