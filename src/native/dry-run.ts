/**
 * On apply and reconcile, the API server's own word on a suite's native policies: a webhook asking
 * for `enforcement: Native` is compiled (compile.ts) and written as a server-side dry run, so what the
 * API server would refuse in a VAP refuses the suite, naming the webhook, before anything is stored
 * (Auto webhooks are not asked on apply: they fall back to the webhook, saying why). Writes nothing;
 * how it asks without a grant to write policies: see DryRunUnavailable.
 */
import * as k8s from '@kubernetes/client-node';
import { changedNativeWebhooks } from '../api/enforcement.ts';
import { NATIVE_DRY_RUN } from '../api/names.ts';
import type { AdmissionSuite, WebhookSpec } from '../api/types.ts';
import type { FieldError } from '../api/validate.ts';
import type { OperatorConfig } from '../config.ts';
import { describeError, FIELD_MANAGER, getObject, statusCode, type Kube, type KubeObject } from '../apiserver/client.ts';
import { NATIVE_API_VERSION, NATIVE_KINDS, nativeObjects } from '../desired/native.ts';

/**
 * The policy the dry runs patch is not there yet (the native process makes it). The serving operator
 * holds no grant to write admission policies (src/manager/native.ts writes them): its dry run patches
 * the one policy it may, NATIVE_DRY_RUN, which the native process makes and never binds, and the API
 * server's words are given back under the webhook's own policy name. Until it exists nothing is asked
 * (a patch would be a create, which the serving operator may not do): on apply the suite is let
 * through, to be judged at reconcile.
 */
export class DryRunUnavailable extends Error {
  constructor() {
    super(`the native enforcement process (portcullis-native) has not made ${NATIVE_DRY_RUN} yet`);
  }
}

/** The API server's refusal of `webhook`'s native policy, in its words, or undefined when it takes it. */
export async function nativeRefusal(kube: Kube, config: Pick<OperatorConfig, 'namespace'>, suite: AdmissionSuite, webhook: WebhookSpec): Promise<string | undefined> {
  // The policy only: a binding is refused for nothing a suite can say.
  const [policy] = nativeObjects(suite, webhook, config) as [KubeObject & { metadata: { name: string } }];
  const probe = { ...policy, metadata: { name: NATIVE_DRY_RUN } };
  if (!(await getObject(kube, { apiVersion: NATIVE_API_VERSION, kind: NATIVE_KINDS.policy, metadata: { name: NATIVE_DRY_RUN } }))) throw new DryRunUnavailable();
  try {
    // A dry run writes nothing: any replica may ask it (no leader gate).
    await kube.objects.patch(probe as k8s.KubernetesObject, undefined, 'All', FIELD_MANAGER, true, k8s.PatchStrategy.ServerSideApply);
    return undefined;
  } catch (err) {
    const code = statusCode(err);
    if (code !== 422 && code !== 400) throw err;
    return describeError(err)
      .replace(/^\d+: /, '')
      .replaceAll(`"${NATIVE_DRY_RUN}"`, `"${policy.metadata.name}"`);
  }
}

export async function nativeRefusals(kube: Kube, config: Pick<OperatorConfig, 'namespace'>, suite: AdmissionSuite, old?: AdmissionSuite): Promise<FieldError[]> {
  const errors: FieldError[] = [];
  for (const { index, webhook } of changedNativeWebhooks(suite, old)) {
    let message: string | undefined;
    try {
      message = await nativeRefusal(kube, config, suite, webhook);
    } catch (err) {
      if (err instanceof DryRunUnavailable) continue;
      throw err;
    }
    if (message !== undefined) errors.push({ field: `spec.webhooks[${index}]`, message: `the API server refuses it as a ValidatingAdmissionPolicy (enforcement: Native): ${message}` });
  }
  return errors;
}
