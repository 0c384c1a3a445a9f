/**
 * handlers: the built-in handlers (the classic admission plugins, as webhooks), one file each,
 * and their registry. A handler is a pure function of the request and its validated config.
 * Handlers must not import the controller or the admission server.
 */
import type { AdmissionRequest, Decision } from '../api/review.ts';

export interface ServedResource {
  group: string;
  resource: string;
}

/**
 * The read-only cluster state a handler may consult, served from the operator's watch caches
 * (never an API call on the request path), as upstream plugins read their informers.
 */
export interface ClusterView {
  /** A Namespace object (labels, annotations), or undefined when it is not (yet) known. */
  namespace(name: string): Record<string, any> | undefined;
  /** The LimitRange objects of a namespace. */
  limitRanges(namespace: string): Record<string, any>[];
}

export const EMPTY_VIEW: ClusterView = { namespace: () => undefined, limitRanges: () => [] };

export interface Handler<Config = Record<string, unknown>> {
  name: string;
  /** The resources the handler understands; a suite may not point it elsewhere. A group or resource of '*' means any. */
  resources: ServedResource[];
  /** Checks and defaults `config`; returns problems as [field under config, message]. */
  parseConfig(config: Record<string, unknown>): { config: Config; errors: { field: string; message: string }[] };
  mutate?(request: AdmissionRequest, config: Config, view: ClusterView): Decision;
  validate?(request: AdmissionRequest, config: Config, view: ClusterView): Decision;
}
