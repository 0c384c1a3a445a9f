/**
 * RequiredLabels: no upstream plugin; follows Gatekeeper library's k8srequiredlabels (and Kyverno's
 * require-labels sample). An object must carry every key in `labels`, its value matching the entry's
 * `allowedRegex` if any (RE2, unanchored as Gatekeeper's: anchor with ^...$). One denial lists every
 * missing label and bad value; `message` replaces that text. Which requests are checked: see requiredLabels.
 */
import { RE2JS } from 're2js';
import { allowed, denied, type AdmissionRequest } from '../api/admission-review.ts';
import type { Handler } from './handler.ts';
import { ConfigReader, isPlainObject } from './config.ts';
import { metadataOf } from './pods.ts';
import { labelKeyProblem } from '../kubernetes/validation.ts';
import { errorMessage } from '../error-message.ts';

export interface RequiredLabel {
  key: string;
  allowedRegex?: string;
  pattern?: RE2JS;
}

export interface RequiredLabelsConfig {
  labels: RequiredLabel[];
  message?: string;
}

function sameLabels(a: Record<string, string> | undefined, b: Record<string, string> | undefined): boolean {
  const left = Object.entries(a ?? {});
  return left.length === Object.keys(b ?? {}).length && left.every(([k, v]) => (b ?? {})[k] === v);
}

/** The problems of `labels` against the config: missing keys first (all in one line), then bad values. */
export function labelProblems(labels: Record<string, string>, config: RequiredLabelsConfig): string[] {
  const missing = config.labels.filter((l) => !(l.key in labels)).map((l) => l.key);
  const problems = missing.length ? [`missing required label${missing.length > 1 ? 's' : ''} ${missing.join(', ')}`] : [];
  for (const label of config.labels) {
    const value = labels[label.key];
    if (value === undefined || !label.pattern) continue;
    if (!label.pattern.matcher(value).find()) problems.push(`label ${label.key}="${value}" does not match ${label.allowedRegex}`);
  }
  return problems;
}

function needsCheck(request: AdmissionRequest): boolean {
  if (request.subResource) return false;
  if (request.operation === 'CREATE') return true;
  if (request.operation !== 'UPDATE') return false;
  const now = metadataOf(request.object);
  if (now?.deletionTimestamp) return false;
  return !sameLabels(now?.labels, metadataOf(request.oldObject)?.labels);
}

/**
 * Any resource may be pointed at it. CREATE is checked; an UPDATE is checked only when it changes
 * metadata.labels, so objects that predate the policy can still be scaled, patched and finalized (a
 * finalizer removal is an UPDATE), and an UPDATE of an object being deleted is never refused.
 * Subresources, DELETE and CONNECT are left alone.
 */
export const requiredLabels: Handler<RequiredLabelsConfig> = {
  name: 'RequiredLabels',
  audits: true,
  resources: [{ group: '*', resource: '*' }],
  parseConfig(config) {
    const read = new ConfigReader(config, 'RequiredLabels', ['labels', 'message']);
    const raw = read.raw('labels');
    const labels: RequiredLabel[] = [];
    if (!Array.isArray(raw) || raw.length === 0) {
      read.error('labels', 'must list at least one label, as {key, allowedRegex}');
    } else {
      raw.forEach((item: unknown, i) => {
        const field = `labels[${i}]`;
        if (!isPlainObject(item)) return read.error(field, 'must be {key, allowedRegex}');
        const extra = Object.keys(item).filter((k) => k !== 'key' && k !== 'allowedRegex');
        if (extra.length) read.error(`${field}.${extra[0]}`, 'unknown field; a label takes key and allowedRegex');
        const key = item.key;
        if (typeof key !== 'string' || labelKeyProblem(key)) {
          return read.error(`${field}.key`, typeof key === 'string' ? `must be a label key: ${labelKeyProblem(key)}` : 'is required');
        }
        const regex = item.allowedRegex;
        if (regex !== undefined && regex !== null && typeof regex !== 'string') return read.error(`${field}.allowedRegex`, 'must be a string');
        if (typeof regex === 'string' && regex !== '') {
          try {
            labels.push({ key, allowedRegex: regex, pattern: RE2JS.compile(regex) });
          } catch (err) {
            read.error(`${field}.allowedRegex`, `is not an RE2 regular expression: ${errorMessage(err)}`);
          }
        } else {
          labels.push({ key });
        }
      });
    }
    const message = read.has('message') ? read.string('message', '') : undefined;
    return { config: message ? { labels, message } : { labels }, errors: read.errors };
  },
  validate(request, config) {
    if (!needsCheck(request)) return allowed();
    const meta = metadataOf(request.object);
    const problems = labelProblems(meta?.labels ?? {}, config);
    if (problems.length === 0) return allowed();
    if (config.message) return denied(`RequiredLabels: ${config.message}`);
    const name = meta?.name || request.name || meta?.generateName || '';
    return denied(`RequiredLabels: ${request.kind.kind} "${name}": ${problems.join('; ')}; add or correct them in metadata.labels`);
  },
};
