/**
 * Label selectors (metav1.LabelSelector) as the API server reads them: whether one selects a set
 * of labels, and metav1validation.ValidateLabelSelector's checks in its words. One home for both,
 * shared by the params of a webhook (a selector of params objects) and the offline matching of
 * the CLI (namespace and object selectors), and handlers' configs (PodSecurity's namespaceSelector).
 * Pure: selectors and labels in, verdicts out.
 */
import { isLabelValue, isQualifiedName } from './validation.ts';

export interface LabelSelector {
  matchLabels?: Record<string, string>;
  matchExpressions?: { key: string; operator: string; values?: string[] }[];
}

/** A label selector's verdict on `labels`; an absent or empty selector selects everything. */
export function selects(selector: LabelSelector | undefined, labels: Record<string, string>): boolean {
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

/** metav1validation.ValidateLabelSelector, field paths under `path`, messages as the API server's. */
export function labelSelectorProblems(selector: unknown, path: string): { field: string; message: string }[] {
  const problems: { field: string; message: string }[] = [];
  if (typeof selector !== 'object' || selector === null || Array.isArray(selector)) return [{ field: path, message: 'must be a label selector (matchLabels, matchExpressions)' }];
  const { matchLabels = {}, matchExpressions = [] } = selector as LabelSelector;
  for (const [key, value] of Object.entries(matchLabels)) {
    for (const message of isQualifiedName(key)) problems.push({ field: `${path}.matchLabels`, message });
    for (const message of isLabelValue(String(value))) problems.push({ field: `${path}.matchLabels`, message });
  }
  if (!Array.isArray(matchExpressions)) return [...problems, { field: `${path}.matchExpressions`, message: 'must be a list' }];
  matchExpressions.forEach((expression, i) => {
    const field = `${path}.matchExpressions[${i}]`;
    const values = expression.values ?? [];
    if (expression.operator === 'In' || expression.operator === 'NotIn') {
      if (values.length === 0) problems.push({ field: `${field}.values`, message: "Required value: must be specified when `operator` is 'In' or 'NotIn'" });
    } else if (expression.operator === 'Exists' || expression.operator === 'DoesNotExist') {
      if (values.length > 0) problems.push({ field: `${field}.values`, message: "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'" });
    } else {
      problems.push({ field: `${field}.operator`, message: `${JSON.stringify(expression.operator)} is not a valid selector operator` });
    }
    for (const message of isQualifiedName(String(expression.key ?? ''))) problems.push({ field: `${field}.key`, message });
    values.forEach((value, j) => {
      for (const message of isLabelValue(String(value))) problems.push({ field: `${field}.values[${j}]`, message });
    });
  });
  return problems;
}

/** A selector given as JSON (a handler's config): its problems with fields relative to it, or the selector when it has none. */
export function readSelector(value: unknown): { selector?: LabelSelector; errors: { field: string; message: string }[] } {
  const errors = labelSelectorProblems(value, '').map(({ field, message }) => ({ field: field.replace(/^\./, ''), message }));
  return errors.length ? { errors } : { selector: value as LabelSelector, errors };
}
