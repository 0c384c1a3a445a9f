/**
 * On apply, the API server's own word on a suite's native policies: each webhook that asks for
 * `enforcement: Native` and changed is compiled (compile.ts) and written as a server-side dry run,
 * so an expression or field the API server would refuse in a ValidatingAdmissionPolicy refuses
 * the suite, naming the webhook, before anything is stored (Auto webhooks are not asked: they fall
 * back to the webhook, saying why). Asked with the operator's credentials, only where native
 * enforcement is on. Writes nothing.
 */
import * as k8s from '@kubernetes/client-node';
import { changedNativeWebhooks } from '../api/enforcement.ts';
import type { AdmissionSuite } from '../api/types.ts';
import type { FieldError } from '../api/validate.ts';
import type { OperatorConfig } from '../config.ts';
import { describeError, FIELD_MANAGER, statusCode, type Kube } from '../apiserver/client.ts';
import { nativeObjects } from './compile.ts';

export async function nativeRefusals(kube: Kube, config: Pick<OperatorConfig, 'namespace'>, suite: AdmissionSuite, old?: AdmissionSuite): Promise<FieldError[]> {
  const errors: FieldError[] = [];
  for (const { index, webhook } of changedNativeWebhooks(suite, old)) {
    // The policy only: a binding is refused for nothing a suite can say.
    const [policy] = nativeObjects(suite, webhook, config);
    try {
      // A dry run writes nothing: any replica answering the suite-validation webhook may ask it (no leader gate).
      await kube.objects.patch(policy as k8s.KubernetesObject, undefined, 'All', FIELD_MANAGER, true, k8s.PatchStrategy.ServerSideApply);
    } catch (err) {
      const code = statusCode(err);
      if (code !== 422 && code !== 400) throw err;
      const message = describeError(err).replace(/^\d+: /, '');
      errors.push({ field: `spec.webhooks[${index}]`, message: `the API server refuses it as a ValidatingAdmissionPolicy (enforcement: Native): ${message}` });
    }
  }
  return errors;
}
