/**
 * Pod Security levels, policy versions and the policy a namespace's labels give
 * (k8s.io/pod-security-admission/api: helpers.go, constants.go): parsing with the library's
 * words and fallbacks, comparison, and `PolicyToEvaluate`. Pure; knows nothing of the checks
 * (checks.ts) or of requests (the handler).
 */
import { goQuote } from '../../go/strconv.ts';

export type Level = 'privileged' | 'baseline' | 'restricted';
export const LEVELS: Level[] = ['privileged', 'baseline', 'restricted'];

/** A policy version: a minor of v1, or latest (newer than any minor, future ones included). */
export interface Version {
  minor: number;
  latest: boolean;
}
export const LATEST: Version = { minor: 0, latest: true };
export const v1 = (minor: number): Version => ({ minor, latest: false });

export interface LevelVersion {
  level: Level;
  version: Version;
}
export interface Policy {
  enforce: LevelVersion;
  audit: LevelVersion;
  warn: LevelVersion;
}
export const MODES = ['enforce', 'audit', 'warn'] as const;
export type Mode = (typeof MODES)[number];

export const LABEL_PREFIX = 'pod-security.kubernetes.io/';
export const levelLabel = (mode: Mode) => `${LABEL_PREFIX}${mode}`;
export const versionLabel = (mode: Mode) => `${LABEL_PREFIX}${mode}-version`;

export const versionString = (v: Version) => (v.latest ? 'latest' : `v1.${v.minor}`);
export const levelVersionString = (lv: LevelVersion) => `${lv.level}:${versionString(lv.version)}`;

export const sameVersion = (a: Version, b: Version) => a.latest === b.latest && (a.latest || a.minor === b.minor);
export const sameLevelVersion = (a: LevelVersion, b: LevelVersion) => a.level === b.level && sameVersion(a.version, b.version);
/** Both privileged, or level and version equal (api.LevelVersion.Equivalent). */
export const equivalent = (a: LevelVersion, b: LevelVersion) => (a.level === 'privileged' && b.level === 'privileged') || sameLevelVersion(a, b);
export const policyEquivalent = (a: Policy, b: Policy) => MODES.every((m) => equivalent(a[m], b[m]));
export const fullyPrivileged = (p: Policy) => MODES.every((m) => p[m].level === 'privileged');

/** -1, 0 or 1 as a is less, as, or more strict than b. */
export function compareLevels(a: Level, b: Level): number {
  if (a === b) return 0;
  if (a === 'privileged') return -1;
  if (a === 'restricted') return 1;
  return b === 'privileged' ? 1 : -1;
}

/** ParseLevel: an unknown level is an error, and reads as restricted. */
export function parseLevel(text: string): { level: Level; error?: string } {
  if ((LEVELS as string[]).includes(text)) return { level: text as Level };
  return { level: 'restricted', error: `must be one of ${LEVELS.join(', ')}` };
}

const VERSION = /^v1\.([0-9]|[1-9][0-9]*)$/;
const MAX_INT = 2n ** 63n - 1n;

/** ParseVersion: "latest" or "v1.x"; anything else is an error, and reads as latest. */
export function parseVersion(text: string): { version: Version; error?: string } {
  if (text === 'latest') return { version: LATEST };
  const match = VERSION.exec(text);
  if (!match || BigInt(match[1]!) > MAX_INT) return { version: LATEST, error: 'must be "latest" or "v1.x"' };
  return { version: v1(Number(match[1])) };
}

/** A label that does not parse, in field.Invalid's words: `metadata.labels[KEY]: Invalid value: "VALUE": DETAIL`. */
export interface LabelError {
  label: string;
  value: string;
  detail: string;
}
export const labelErrorString = (e: LabelError) => `metadata.labels[${e.label}]: Invalid value: ${goQuote(e.value)}: ${e.detail}`;

/** An ErrorList's aggregate text: one error alone, several as [a, b] (duplicates once). */
export function aggregate(errors: LabelError[]): string {
  const texts = [...new Set(errors.map(labelErrorString))];
  return texts.length === 1 ? texts[0]! : `[${texts.join(', ')}]`;
}

/**
 * api.PolicyToEvaluate: the namespace's labels over `defaults`. A valid policy comes back even
 * with errors (unparsable levels read as restricted for enforce, privileged for audit and warn;
 * versions as latest). Warn follows a stricter enforce level set by label when warn is not set.
 */
export function policyToEvaluate(labels: Record<string, string> | undefined, defaults: Policy): { policy: Policy; errors: LabelError[] } {
  const policy: Policy = { enforce: { ...defaults.enforce }, audit: { ...defaults.audit }, warn: { ...defaults.warn } };
  const errors: LabelError[] = [];
  if (!labels || Object.keys(labels).length === 0) return { policy, errors };
  let hasEnforceLevel = false;
  for (const mode of MODES) {
    const level = labels[levelLabel(mode)];
    if (level !== undefined) {
      const parsed = parseLevel(level);
      policy[mode].level = parsed.level;
      if (parsed.error) {
        errors.push({ label: levelLabel(mode), value: level, detail: parsed.error });
        // Audit and warn fail open; enforce reads as restricted.
        if (mode !== 'enforce') policy[mode].level = 'privileged';
      } else if (mode === 'enforce') hasEnforceLevel = true;
    }
    const version = labels[versionLabel(mode)];
    if (version !== undefined) {
      const parsed = parseVersion(version);
      policy[mode].version = parsed.version;
      if (parsed.error) errors.push({ label: versionLabel(mode), value: version, detail: parsed.error });
    }
  }
  if (!(levelLabel('warn') in labels) && hasEnforceLevel && compareLevels(policy.enforce.level, policy.warn.level) > 0) {
    policy.warn.level = policy.enforce.level;
    if (!(versionLabel('warn') in labels)) policy.warn.version = policy.enforce.version;
  }
  return { policy, errors };
}
