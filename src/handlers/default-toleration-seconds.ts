/**
 * DefaultTolerationSeconds, after the Kubernetes admission plugin of that name: a Pod that does
 * not already tolerate the node.kubernetes.io/not-ready and node.kubernetes.io/unreachable
 * NoExecute taints gets a toleration for each, for the configured seconds (default 300, as the
 * upstream flags), so that it is evicted from a failed node after that time. A toleration with
 * an empty key (with operator Exists) or with an empty effect already covers a taint, as
 * upstream. CREATE and UPDATE of Pods proper; subresources are left alone.
 */
import { allowed, patched } from '../api/admission-review.ts';
import type { JsonPatchOperation } from '../api/types.ts';
import type { Handler } from './handler.ts';
import { ConfigReader } from './config.ts';
import { isPod, podSpecOf, type PodSpec } from './pods.ts';

export const NOT_READY_TAINT = 'node.kubernetes.io/not-ready';
export const UNREACHABLE_TAINT = 'node.kubernetes.io/unreachable';

export interface DefaultTolerationSecondsConfig {
  notReadyTolerationSeconds: number;
  unreachableTolerationSeconds: number;
}

type Toleration = NonNullable<PodSpec['tolerations']>[number];

/** Whether one of `tolerations` already tolerates the NoExecute taint `key`. */
export function tolerates(tolerations: Toleration[], key: string): boolean {
  return tolerations.some((t) => (!t.key || t.key === key) && (!t.effect || t.effect === 'NoExecute'));
}

export function missingTolerations(spec: PodSpec, config: DefaultTolerationSecondsConfig): Toleration[] {
  const existing = spec.tolerations ?? [];
  const wanted: [string, number][] = [
    [NOT_READY_TAINT, config.notReadyTolerationSeconds],
    [UNREACHABLE_TAINT, config.unreachableTolerationSeconds],
  ];
  return wanted.filter(([key]) => !tolerates(existing, key)).map(([key, seconds]) => ({ key, operator: 'Exists', effect: 'NoExecute', tolerationSeconds: seconds }));
}

export const defaultTolerationSeconds: Handler<DefaultTolerationSecondsConfig> = {
  name: 'DefaultTolerationSeconds',
  resources: [{ group: '', resource: 'pods' }],
  parseConfig(config) {
    const read = new ConfigReader(config, 'DefaultTolerationSeconds', ['notReadyTolerationSeconds', 'unreachableTolerationSeconds']);
    const parsed = {
      notReadyTolerationSeconds: read.integer('notReadyTolerationSeconds', 300),
      unreachableTolerationSeconds: read.integer('unreachableTolerationSeconds', 300),
    };
    return { config: parsed, errors: read.errors };
  },
  mutate(request, config) {
    if (!isPod(request) || (request.operation !== 'CREATE' && request.operation !== 'UPDATE')) return allowed();
    const spec = podSpecOf(request.object);
    if (!spec) return allowed();
    const missing = missingTolerations(spec, config);
    if (missing.length === 0) return allowed();
    const ops: JsonPatchOperation[] = spec.tolerations ? missing.map((toleration) => ({ op: 'add', path: '/spec/tolerations/-', value: toleration })) : [{ op: 'add', path: '/spec/tolerations', value: missing }];
    return patched(ops);
  },
};
