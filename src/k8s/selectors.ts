/**
 * Label selectors (metav1.LabelSelector): a selector's verdict on a set of labels, as the API
 * server evaluates a webhook's namespaceSelector and objectSelector, and the problems of a
 * selector written in a config, worded as the built-in handlers word theirs. Pure; the selector's
 * shape is structural so that this floor imports nothing above it.
 */
import { labelKeyProblem, labelValueProblem } from './validation.ts';

export interface Selector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

/** A label selector's verdict on `labels`; an absent or empty selector selects everything. */
export function selects(selector: Selector | undefined, labels: Record<string, string>): boolean {
  for (const [key, value] of Object.entries(selector?.matchLabels ?? {})) if (labels[key] !== value) return false;
  for (const { key, operator, values = [] } of selector?.matchExpressions ?? []) {
    const has = key in labels;
    if (operator === 'In' && !(has && values.includes(labels[key]!))) return false;
    if (operator === 'NotIn' && has && values.includes(labels[key]!)) return false;
    if (operator === 'Exists' && !has) return false;
    if (operator === 'DoesNotExist' && has) return false;
  }
  return true;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** The problems of a selector given as JSON, each as [field under the selector, message]; the selector when it has none. */
export function readSelector(value: unknown): { selector?: Selector; errors: { field: string; message: string }[] } {
  const errors: { field: string; message: string }[] = [];
  if (!isObject(value)) return { errors: [{ field: '', message: 'must be a label selector (matchLabels, matchExpressions)' }] };
  for (const key of Object.keys(value)) if (key !== 'matchLabels' && key !== 'matchExpressions') errors.push({ field: key, message: 'unknown field; a label selector takes matchLabels, matchExpressions' });
  const { matchLabels, matchExpressions } = value;
  if (matchLabels !== undefined && matchLabels !== null) {
    if (!isObject(matchLabels)) errors.push({ field: 'matchLabels', message: 'must be a map of label keys to values' });
    else {
      for (const [k, v] of Object.entries(matchLabels)) {
        const problem = labelKeyProblem(k) ?? (typeof v === 'string' ? labelValueProblem(v) : 'must be a string');
        if (problem) errors.push({ field: `matchLabels.${k}`, message: problem });
      }
    }
  }
  if (matchExpressions !== undefined && matchExpressions !== null) {
    if (!Array.isArray(matchExpressions)) errors.push({ field: 'matchExpressions', message: 'must be a list of {key, operator, values}' });
    else {
      matchExpressions.forEach((e: unknown, i) => {
        const at = `matchExpressions[${i}]`;
        if (!isObject(e)) return errors.push({ field: at, message: 'must be {key, operator, values}' });
        const problem = typeof e.key === 'string' ? labelKeyProblem(e.key) : 'must be a string';
        if (problem) errors.push({ field: `${at}.key`, message: problem });
        const values = e.values ?? [];
        if (!Array.isArray(values) || values.some((v) => typeof v !== 'string')) return errors.push({ field: `${at}.values`, message: 'must be a list of strings' });
        if (e.operator === 'In' || e.operator === 'NotIn') {
          if (values.length === 0) errors.push({ field: `${at}.values`, message: `must be non-empty when operator is ${e.operator}` });
        } else if (e.operator === 'Exists' || e.operator === 'DoesNotExist') {
          if (values.length) errors.push({ field: `${at}.values`, message: `must be empty when operator is ${e.operator}` });
        } else errors.push({ field: `${at}.operator`, message: 'must be one of In, NotIn, Exists, DoesNotExist' });
        return undefined;
      });
    }
  }
  return errors.length ? { errors } : { selector: value as Selector, errors };
}
