/**
 * The admission thread's wire: what the main thread (thread.ts) and the thread (thread-worker.ts)
 * send each other, and what the thread starts with. Types only; must not hold any behaviour of
 * either side (a message changes here, both sides follow).
 */
import type { AdmissionSuite, FailurePolicy } from '../../api/types.ts';
import type { Outcome } from '../../api/admission-review.ts';
import type { ObjectRef } from '../../audit/results.ts';
import type { CheckResult } from '../../audit/targets.ts';
import type { LogLevel } from '../../log.ts';
import type { KitSignal } from '../../workers/kit.ts';
import type { ParamsChange } from '../../apiserver/params-watches.ts';
import type { ExceptionChange } from '../../registry/exceptions.ts';
import type { LookupChange } from '../../apiserver/lookups.ts';
import type { SchemaChange } from '../../apiserver/openapi-state.ts';
import type { PolicyContext } from '../../registry/policies.ts';
import type { TypeCheckDefault } from '../../registry/typecheck.ts';
import type { Question, QuestionAnswer } from './main-questions.ts';
import type { ListenOptions, ServingLimits } from '../endpoint.ts';
import type { Answered } from '../answering.ts';
import type { ConnectionCounts, ConnectionKind } from '../connection-limits.ts';

export type MirroredKind = 'Namespace' | 'LimitRange';

/** One answer counted in the thread, for the main thread's metrics. */
export type Observation =
  | ['answered', suite: string, webhook: string, operation: string, outcome: Outcome, seconds: number, failurePolicy: FailurePolicy]
  | ['evaluated', suite: string, webhook: string, seconds: number, cost: number]
  | ['shadowed', suite: string, webhook: string, ref: ObjectRef, results: CheckResult[]]
  | ['rejected', code: string]
  | ['excepted', suite: string, webhook: string, namespace: string, name: string]
  /** The endpoint's connections by kind, as they stood when the batch was sent. */
  | ['connections', counts: ConnectionCounts]
  /** A connection limit neared (admission/connection-limits.ts), with its cause. */
  | ['connections-near', kind: ConnectionKind, cause: string];

export interface ThreadData {
  listen: ListenOptions;
  /** The levels the main thread's logger writes: the thread sends only those lines. */
  logLevels: LogLevel[];
  limits?: Partial<ServingLimits>;
  authorizer: boolean;
  mapper: boolean;
  /** The suites' (registry.context.operatorNamespace): what a suite may name there is checked as on the main thread. */
  operatorNamespace?: string;
  /** The suites' (registry.context.nativeEnforcement). */
  nativeEnforcement?: boolean;
  /** AdmissionThreadOptions.handlerModules. */
  handlerModules?: string;
  /** Present when the thread answers the validation webhooks (AdmissionThreadOptions.validation). */
  validation?: {
    paramsAccess: boolean;
    typeChecking?: { byDefault?: TypeCheckDefault };
    /** The policies' context but its clients (whether they are there: their questions go to the main thread). */
    policies?: Pick<PolicyContext, 'limits' | 'protectedNamespaces' | 'operatorNamespace'> & { authorizer: boolean; mapper: boolean };
  };
}

export type ToThread =
  | { type: 'suite'; suite: AdmissionSuite }
  | { type: 'removed'; name: string }
  | { type: 'certificate'; key: string; pems?: { certPem: string; keyPem: string } }
  | { type: 'mirror'; kind: MirroredKind; object: Record<string, any>; deleted: boolean }
  | { type: 'params'; change: ParamsChange }
  | { type: 'exception'; change: ExceptionChange }
  | { type: 'lookup'; change: LookupChange }
  | { type: 'schemas'; change: SchemaChange }
  | { type: 'forwarded'; id: number; answer?: Answered; error?: string }
  | { type: 'draining' }
  /** The API server's addresses now (AdmissionThreadOptions.apiServers). */
  | { type: 'apiservers'; addresses: string[] }
  /** Send what was counted now; the reply (flushed) follows it. */
  | { type: 'flush'; id: number }
  | { type: 'close' }
  | QuestionAnswer;

export type FromThread =
  | { type: 'listening'; port: number }
  | { type: 'listen-failed'; code?: string; message: string }
  /** About to compile the suite (suiteKey as the key): if the thread dies before it says synced, the suite is the suspect. */
  | KitSignal
  | { type: 'synced'; name: string; uid?: string; generation: number }
  /** Compiling the suite threw in the thread: it is not served there (and is quarantined). */
  | { type: 'compile-failed'; name: string; uid?: string; generation: number; message: string }
  | { type: 'served'; key: string; certPem?: string }
  | { type: 'forward'; id: number; url: string; body: string | Uint8Array }
  | { type: 'renew-schemas'; key: string }
  | { type: 'observed'; observations: Observation[] }
  | { type: 'flushed'; id: number }
  | { type: 'log'; level: LogLevel; message: string; fields?: object }
  | { type: 'closed' }
  | Question;
