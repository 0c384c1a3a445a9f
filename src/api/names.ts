/** The names the contract fixes for everything made on behalf of a suite. */
import { GROUP } from './types.ts';

export const OPERATOR_NAME = 'portcullis-operator';
/**
 * Native enforcement's own identity (--role=native): its Deployment, ServiceAccount and leader
 * Lease; the only writer of admission policies (deploy/optional/native-enforcement.yaml).
 */
export const NATIVE_NAME = 'portcullis-native';
/** deploy/04-token-guard.yaml's policy and binding: the native process puts them back if deleted. */
export const TOKEN_GUARD = 'portcullis-operator-token-guard';
/**
 * The one ValidatingAdmissionPolicy the serving operator may patch (RBAC resourceNames), and only
 * as a dry run: the API server's word on a native policy on apply. Made by the native process,
 * never bound, so it enforces nothing whatever it is patched to.
 */
export const NATIVE_DRY_RUN = 'portcullis-native-dry-run';
export const POD_LABELS = { 'app.kubernetes.io/name': 'portcullis' } as const;
export const MANAGED_BY_LABELS = { 'app.kubernetes.io/managed-by': 'portcullis' } as const;
export const SUITE_LABEL = `${GROUP}/suite`;
export const CA_SECRET = 'portcullis-ca';

export const configurationName = (suite: string) => `portcullis-${suite}`;
export const tlsSecretName = (suite: string) => `portcullis-${suite}-tls`;
export const defaultServiceName = (suite: string) => `portcullis-${suite}`;
export const webhookFullName = (suite: string, webhook: string) => `${webhook}.${suite}.${GROUP}`;
export const admitPath = (suite: string, webhook: string) => `/admit/${suite}/${webhook}`;

/** The operator's own webhook that validates AdmissionSuites on apply. */
export const SUITE_VALIDATION = {
  configuration: 'portcullis-admissionsuites',
  webhook: `admissionsuites.${GROUP}`,
  path: '/validate/admissionsuites',
  service: 'portcullis-operator',
  secret: 'portcullis-operator-tls',
  crd: `admissionsuites.${GROUP}`,
} as const;

/**
 * The operator-owned configurations that serve every AdmissionPolicy: one Mutating and one
 * Validating, each present while a policy of its type exists. The API server calls mutating
 * configurations in name order, and `portcullis--namespaced` sorts before every suite's
 * `portcullis-<suite>` (a suite name starts with a letter or digit, both after `-`): a team's
 * mutations come first, as part of what its writer asked, and no team can undo a cluster suite's
 * mutation (the suites' come after, and the teams' are never re-invoked).
 */
export const NAMESPACED = {
  configuration: 'portcullis--namespaced',
  /** Its name in earlier versions, when the teams' mutations came after the suites': removed where the operator finds it. */
  legacyConfiguration: 'portcullis.namespaced',
  webhook: `admissionpolicies.${GROUP}`,
  paths: { Mutating: '/namespaced/mutate', Validating: '/namespaced/validate' },
  /** The operator's webhook that refuses invalid AdmissionPolicies on apply (beside the suites' one). */
  validationWebhook: `admissionpolicies.validation.${GROUP}`,
  validationPath: '/validate/admissionpolicies',
  crd: `admissionpolicies.${GROUP}`,
  /** Who wrote a policy last, and their groups (comma-separated), set by the API server itself (deploy/07's MutatingAdmissionPolicy). */
  authorAnnotation: `${GROUP}/author`,
  authorGroupsAnnotation: `${GROUP}/author-groups`,
} as const;
