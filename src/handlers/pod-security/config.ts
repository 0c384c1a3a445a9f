/**
 * PodSecurity's config, read with field-named errors: `defaults` (the level and version of each
 * mode where a namespace has no label, as PodSecurityConfiguration's defaults), `exemptions`
 * (usernames, namespaces, runtimeClasses, as its exemptions) and what the in-tree plugin cannot
 * take, `namespacePolicies`: per-suite levels for the namespaces a selector picks, the first
 * that selects a namespace giving its defaults (or, with `ignoreNamespaceLabels`, its whole
 * policy). Pure; the request flow is the handler's.
 */
import { ConfigReader, isPlainObject } from '../config.ts';
import { readSelector, selects, type LabelSelector as Selector } from '../../kubernetes/selectors.ts';
import { LATEST, MODES, parseLevel, parseVersion, type Policy } from './levels.ts';

export interface NamespacePolicy {
  namespaceSelector: Selector;
  policy: Policy;
  ignoreNamespaceLabels: boolean;
}

export interface PodSecurityConfig {
  defaults: Policy;
  exemptions: { usernames: string[]; namespaces: string[]; runtimeClasses: string[] };
  namespacePolicies: NamespacePolicy[];
}

const LEVEL_FIELDS = MODES.flatMap((mode) => [mode, `${mode}Version`]);
/** The in-tree plugin's defaults: privileged, latest, for every mode. */
export const PRIVILEGED_POLICY: Policy = {
  enforce: { level: 'privileged', version: LATEST },
  audit: { level: 'privileged', version: LATEST },
  warn: { level: 'privileged', version: LATEST },
};

/** A reader of the object at `path` whose problems land, under `path`, in the parent's. */
function sub(parent: ConfigReader, path: string, value: Record<string, unknown>, known: string[]): ConfigReader {
  const reader = new ConfigReader(value, 'PodSecurity', known);
  for (const e of reader.errors) parent.error(`${path}.${e.field}`, e.message);
  reader.error = (field: string, message: string) => parent.error(`${path}.${field}`, message);
  return reader;
}

function nested(parent: ConfigReader, field: string, known: string[]): ConfigReader | undefined {
  if (!parent.has(field)) return undefined;
  const value = parent.raw(field);
  if (isPlainObject(value)) return sub(parent, field, value, known);
  parent.error(field, `must be an object with ${known.join(', ')}`);
  return undefined;
}

/** The six level fields of a policy over `base`. */
function readPolicy(read: ConfigReader | undefined, base: Policy): Policy {
  const policy: Policy = { enforce: { ...base.enforce }, audit: { ...base.audit }, warn: { ...base.warn } };
  if (!read) return policy;
  for (const mode of MODES) {
    if (read.has(mode)) {
      const text = read.string(mode, '');
      const parsed = parseLevel(text);
      if (parsed.error) read.error(mode, parsed.error);
      else policy[mode].level = parsed.level;
    }
    const field = `${mode}Version`;
    if (read.has(field)) {
      const text = read.string(field, 'latest');
      const parsed = parseVersion(text);
      if (parsed.error) read.error(field, parsed.error);
      else policy[mode].version = parsed.version;
    }
  }
  return policy;
}

export function parsePodSecurityConfig(config: Record<string, unknown>): { config: PodSecurityConfig; errors: { field: string; message: string }[] } {
  const read = new ConfigReader(config, 'PodSecurity', ['defaults', 'exemptions', 'namespacePolicies']);
  const defaults = readPolicy(nested(read, 'defaults', LEVEL_FIELDS), PRIVILEGED_POLICY);
  const exempt = nested(read, 'exemptions', ['usernames', 'namespaces', 'runtimeClasses']);
  const exemptions = {
    usernames: exempt?.stringList('usernames', []) ?? [],
    namespaces: exempt?.stringList('namespaces', []) ?? [],
    runtimeClasses: exempt?.stringList('runtimeClasses', []) ?? [],
  };
  const namespacePolicies: NamespacePolicy[] = [];
  const list = read.raw('namespacePolicies');
  if (list !== undefined && list !== null) {
    if (!Array.isArray(list)) read.error('namespacePolicies', 'must be a list of {namespaceSelector, enforce, enforceVersion, audit, auditVersion, warn, warnVersion, ignoreNamespaceLabels}');
    else {
      list.forEach((entry: unknown, i) => {
        const field = `namespacePolicies[${i}]`;
        if (!isPlainObject(entry)) return read.error(field, 'must be an object');
        const entryReader = sub(read, field, entry, ['namespaceSelector', 'ignoreNamespaceLabels', ...LEVEL_FIELDS]);
        if (!entryReader.has('namespaceSelector')) return read.error(`${field}.namespaceSelector`, 'required: the namespaces this policy applies to');
        const selector = readSelector(entryReader.raw('namespaceSelector'));
        selector.errors.forEach((e) => read.error(`${field}.namespaceSelector${e.field ? `.${e.field}` : ''}`, e.message));
        const ignore = entryReader.raw('ignoreNamespaceLabels');
        if (ignore !== undefined && ignore !== null && typeof ignore !== 'boolean') read.error(`${field}.ignoreNamespaceLabels`, 'must be a boolean');
        const policy = readPolicy(entryReader, defaults);
        if (selector.selector) namespacePolicies.push({ namespaceSelector: selector.selector, policy, ignoreNamespaceLabels: ignore === true });
        return undefined;
      });
    }
  }
  return { config: { defaults, exemptions, namespacePolicies }, errors: read.errors };
}

/** The policy a namespace starts from before its labels: the first namespacePolicies entry selecting it, else the defaults. */
export function basePolicy(config: PodSecurityConfig, namespaceLabels: Record<string, string>): { policy: Policy; ignoreLabels: boolean } {
  const entry = config.namespacePolicies.find((p) => selects(p.namespaceSelector, namespaceLabels));
  return entry ? { policy: entry.policy, ignoreLabels: entry.ignoreNamespaceLabels } : { policy: config.defaults, ignoreLabels: false };
}
