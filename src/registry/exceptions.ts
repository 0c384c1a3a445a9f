/**
 * registry: the AdmissionExceptions and ClusterAdmissionExceptions every replica holds, indexed by the suite webhook they name,
 * so that a request to a webhook no exception names costs one Map lookup and nothing else; and
 * the question the request path asks of them: which exceptions cover this request now. The store
 * is filled by a watch (manager/cluster-state.ts) and copied to the admission thread as the
 * suites are (subscribe). Applying an exception to a decision is compile.ts's and
 * policy/engine/rules.ts's; whether one is well-formed and allowed is api/exceptions.ts's. No I/O.
 */
import type { AdmissionRequest } from '../api/admission-review.ts';
import { expiryOf, imageListed, matchesRequest, suiteRefusal, type AnyException } from '../api/exceptions.ts';
import { selects } from '../kubernetes/selectors.ts';
import type { AdmissionSuite } from '../api/types.ts';

/** What changed: an exception written (or rewritten), or one deleted. */
export type ExceptionChange = { exception: AnyException } | { removed: { namespace: string; name: string } };

interface Entry {
  exception: AnyException;
  /** When it stops applying, in ms since the epoch: compared with the clock at each request. */
  expiresAt: number;
  /** The validation indexes it excuses; undefined: every one. */
  validations?: ReadonlySet<number>;
  /** For a PodSecurity webhook: the controls it lets through, and the images it is limited to. Set, it excuses no CEL validation. */
  podSecurity?: { controls: ReadonlySet<string>; images?: readonly string[] };
}

/** What a request's evaluation asks while it decides (RulesContext.excuse), and what it used. */
export interface Excuse {
  /** Whether a failure of the validation at `index` is let through (then recorded as used). */
  covers(index: number): boolean;
  /** The exception that lets a failure of the validation at `index` through (recorded as used), if one does. */
  coveredBy(index: number): AnyException | undefined;
  /**
   * Whether a failure of the PodSecurity control `control` is let through (then recorded as used);
   * `images`: those of the containers the failure names, undefined when it names the pod's own
   * fields (then only an exception without images lets it through).
   */
  coversControl(control: string, images: readonly string[] | undefined): boolean;
  /** The exceptions that let a failure through, in the order first used. */
  readonly used: AnyException[];
}

const webhookKey = (suite: string, webhook: string) => `${suite}\n${webhook}`;

/** What a stored exception lets through a PodSecurity webhook, read defensively (one written past a stopped operator is not trusted to be well-formed). */
function podSecurityOf(exception: AnyException): Entry['podSecurity'] {
  const podSecurity = exception.spec.podSecurity as unknown;
  if (!podSecurity || typeof podSecurity !== 'object') return undefined;
  const { controls, images } = podSecurity as { controls?: unknown; images?: unknown };
  const strings = (value: unknown) => (Array.isArray(value) ? value.filter((v): v is string => typeof v === 'string') : []);
  // Images set but none readable: it lets nothing through, rather than every image.
  return { controls: new Set(strings(controls)), ...(images !== undefined ? { images: strings(images) } : {}) };
}

export class ExceptionStore {
  /**
   * suite\nwebhook -> namespace -> namespace/name -> entry. By namespace, so that a request reads
   * only its own namespace's exceptions: one namespace's many cost no other namespace anything.
   */
  private readonly byWebhook = new Map<string, Map<string, Map<string, Entry>>>();
  /** A ClusterAdmissionException's entries (namespace ''): suite\nwebhook -> ref -> entry; each read by every namespace's requests, its selector asked. */
  private readonly clusterByWebhook = new Map<string, Map<string, Entry>>();
  /** namespace/name -> the webhook key and namespace it is filed under. */
  private readonly filed = new Map<string, { key: string; namespace: string }>();
  private readonly sources = new Map<string, AnyException>();
  private readonly listeners: ((change: ExceptionChange) => void)[] = [];

  /** Files `exception` under the webhook it names (again, if it named another before). One with no readable expiry is not filed: it applies nowhere. */
  set(exception: AnyException): void {
    const ref = `${exception.metadata.namespace}/${exception.metadata.name}`;
    this.unfile(ref);
    this.sources.set(ref, exception);
    const expiresAt = expiryOf(exception.spec?.expires);
    if (expiresAt !== undefined && typeof exception.spec.suite === 'string' && typeof exception.spec.webhook === 'string') {
      const key = webhookKey(exception.spec.suite, exception.spec.webhook);
      const validations = Array.isArray(exception.spec.validations) ? new Set(exception.spec.validations) : undefined;
      const podSecurity = podSecurityOf(exception);
      const namespace = exception.metadata.namespace;
      const entry: Entry = { exception, expiresAt, ...(validations ? { validations } : {}), ...(podSecurity ? { podSecurity } : {}) };
      if (namespace === '') {
        let entries = this.clusterByWebhook.get(key);
        if (!entries) this.clusterByWebhook.set(key, (entries = new Map()));
        entries.set(ref, entry);
      } else {
        let namespaces = this.byWebhook.get(key);
        if (!namespaces) this.byWebhook.set(key, (namespaces = new Map()));
        let entries = namespaces.get(namespace);
        if (!entries) namespaces.set(namespace, (entries = new Map()));
        entries.set(ref, entry);
      }
      this.filed.set(ref, { key, namespace });
    }
    for (const listener of this.listeners) listener({ exception });
  }

  remove(namespace: string, name: string): void {
    const ref = `${namespace}/${name}`;
    this.unfile(ref);
    this.sources.delete(ref);
    for (const listener of this.listeners) listener({ removed: { namespace, name } });
  }

  /** Applies a change made elsewhere (the main thread's store, in a copy). */
  apply(change: ExceptionChange): void {
    if ('exception' in change) this.set(change.exception);
    else this.remove(change.removed.namespace, change.removed.name);
  }

  /** Called with every exception held, then on every change (the admission thread's copy); the returned function stops it. */
  subscribe(listener: (change: ExceptionChange) => void): () => void {
    for (const exception of this.sources.values()) listener({ exception });
    this.listeners.push(listener);
    return () => this.listeners.splice(this.listeners.indexOf(listener), 1);
  }

  /** The exception `namespace`/`name` as last watched (its status too), if held. */
  get(namespace: string, name: string): AnyException | undefined {
    return this.sources.get(`${namespace}/${name}`);
  }

  /** Every exception held (a copy started after they came: a new review worker). */
  held(): AnyException[] {
    return [...this.sources.values()];
  }

  /** Whether any exception names this webhook: false costs the request path nothing more. */
  names(suite: string, webhook: string): boolean {
    const key = webhookKey(suite, webhook);
    return this.byWebhook.has(key) || this.clusterByWebhook.has(key);
  }

  /**
   * The excuse for `request` to webhook `webhook` of `suite`, from the exceptions that cover it at
   * `now`: unexpired, in the request's namespace (never a protected one), taken by the suite from
   * that namespace, matching the request. Undefined when none does.
   */
  excuse(
    suite: Pick<AdmissionSuite, 'spec' | 'metadata'>,
    webhook: string,
    request: AdmissionRequest,
    context: { now: number; namespaceLabels(namespace: string): Record<string, string> | undefined; protectedNamespaces: readonly string[] },
  ): Excuse | undefined {
    const namespace = request.namespace;
    const key = webhookKey(suite.metadata.name, webhook);
    const entries = namespace ? this.byWebhook.get(key)?.get(namespace) : undefined;
    // A cluster exception covers namespaced requests only, in the namespaces its selector selects.
    const cluster = namespace ? this.clusterByWebhook.get(key) : undefined;
    if ((!entries && !cluster) || !namespace || context.protectedNamespaces.includes(namespace)) return undefined;
    let covering: Entry[] | undefined;
    for (const entry of entries?.values() ?? []) {
      if (context.now >= entry.expiresAt) continue;
      if (!matchesRequest(entry.exception.spec.match, request)) continue;
      (covering ??= []).push(entry);
    }
    let labels: Record<string, string> | undefined;
    for (const entry of cluster?.values() ?? []) {
      if (context.now >= entry.expiresAt) continue;
      if (!matchesRequest(entry.exception.spec.match, request)) continue;
      const selector = entry.exception.spec.namespaceSelector;
      if (selector && !selects(selector, (labels ??= context.namespaceLabels(namespace)) ?? {})) continue;
      (covering ??= []).push(entry);
    }
    if (!covering || suiteRefusal(suite, context.namespaceLabels(namespace)) !== undefined) return undefined;
    const found = covering;
    const used: AnyException[] = [];
    const use = (entry: Entry | undefined) => {
      if (entry && !used.includes(entry.exception)) used.push(entry.exception);
      return entry?.exception;
    };
    // An exception written for PodSecurity's controls excuses no CEL validation (it is refused on apply for such a webhook anyway).
    const coveredBy = (index: number) => use(found.find((e) => !e.podSecurity && (!e.validations || e.validations.has(index))));
    const coversControl = (control: string, images: readonly string[] | undefined) =>
      use(found.find((e) => e.podSecurity?.controls.has(control) && (!e.podSecurity.images || (images !== undefined && images.length > 0 && images.every((image) => imageListed(e.podSecurity!.images!, image)))))) !== undefined;
    return { used, coveredBy, covers: (index) => coveredBy(index) !== undefined, coversControl };
  }

  private unfile(ref: string): void {
    const filed = this.filed.get(ref);
    if (filed === undefined) return;
    this.filed.delete(ref);
    if (filed.namespace === '') {
      const entries = this.clusterByWebhook.get(filed.key)!;
      entries.delete(ref);
      if (entries.size === 0) this.clusterByWebhook.delete(filed.key);
      return;
    }
    const namespaces = this.byWebhook.get(filed.key)!;
    const entries = namespaces.get(filed.namespace)!;
    entries.delete(ref);
    if (entries.size === 0) namespaces.delete(filed.namespace);
    if (namespaces.size === 0) this.byWebhook.delete(filed.key);
  }
}
