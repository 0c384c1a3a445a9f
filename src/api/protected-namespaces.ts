/**
 * The namespaces no webhook of the operator's is ever called for, so that the cluster can always
 * be repaired: its own, kube-system and kube-node-lease. Said once here, as data: the
 * configurations leave them out of every namespaceSelector (desired/objects.ts), an
 * AdmissionPolicy there is refused (api/validate.ts), and so is a NamespaceProtection config that
 * names one (handlers/namespace-protection.ts), which would protect nothing there. Pure.
 */

/** Left out wherever the operator runs. */
export const SYSTEM_NAMESPACES: readonly string[] = ['kube-system', 'kube-node-lease'];

/** The operator's namespace and the system ones, without repeats. */
export function protectedNamespaces(operatorNamespace: string): string[] {
  return [...new Set([operatorNamespace, ...SYSTEM_NAMESPACES])];
}
