/**
 * What a thread of ours that judges reviews (the review worker, the admission thread) asks the main
 * thread, which holds the API clients: CEL's `authorizer` checks (SubjectAccessReviews) and
 * RESTMappings (API discovery). Owns these two questions' messages on both sides; not how a thread
 * is started, nor anything else sent to it.
 */
import type { AuthorizationAttributes, AuthorizationDecision, Authorizer } from '../../api/authorization.ts';
import type { KindMapper, RestMapping } from '../../api/kind-mapper.ts';

/** `id` is the asking thread's own (the review it judges); `check` tells its questions apart. */
export type Question = { type: 'authorize'; id: number; check: number; attributes: AuthorizationAttributes } | { type: 'map'; id: number; check: number; group: string; version: string; kind: string };

export type QuestionAnswer = { type: 'authorized'; id: number; check: number; decision?: AuthorizationDecision; error?: string } | { type: 'mapped'; id: number; check: number; mappings?: RestMapping[]; error?: string };

interface Waiting<T> {
  resolve(value: T): void;
  reject(err: Error): void;
}

/** The asking side: an Authorizer and a KindMapper whose answers come from the main thread. */
export class MainQuestions {
  private readonly send: (question: Question) => void;
  private readonly id: () => number;
  private nextCheck = 0;
  private readonly checks = new Map<number, Waiting<AuthorizationDecision>>();
  private readonly mappings = new Map<number, Waiting<RestMapping[]>>();

  /** `id`: what each question is sent with (the review being judged, where the thread says). */
  constructor(send: (question: Question) => void, id: () => number = () => 0) {
    this.send = send;
    this.id = id;
  }

  readonly authorizer: Authorizer = {
    check: (attributes) =>
      new Promise((resolve, reject) => {
        const check = this.nextCheck++;
        this.checks.set(check, { resolve, reject });
        this.send({ type: 'authorize', id: this.id(), check, attributes });
      }),
  };

  readonly mapper: KindMapper = {
    restMappings: (group, version, kind) =>
      new Promise((resolve, reject) => {
        const check = this.nextCheck++;
        this.mappings.set(check, { resolve, reject });
        this.send({ type: 'map', id: this.id(), check, group, version, kind });
      }),
  };

  /** An answer from the main thread; true when the message was one. */
  answered(message: { type: string }): boolean {
    if (message.type === 'authorized') {
      const { check, decision, error } = message as Extract<QuestionAnswer, { type: 'authorized' }>;
      const waiting = this.checks.get(check);
      this.checks.delete(check);
      if (decision) waiting?.resolve(decision);
      else waiting?.reject(new Error(error ?? 'authorization failed'));
      return true;
    }
    if (message.type === 'mapped') {
      const { check, mappings, error } = message as Extract<QuestionAnswer, { type: 'mapped' }>;
      const waiting = this.mappings.get(check);
      this.mappings.delete(check);
      if (mappings) waiting?.resolve(mappings);
      else waiting?.reject(new Error(error ?? 'API discovery failed'));
      return true;
    }
    return false;
  }
}

/** The answering side (the main thread): `reply` gets the answer to `question`, from the operator's own Authorizer and KindMapper. */
export function answerQuestion(answerers: { authorizer?: Authorizer; mapper?: KindMapper }, question: Question, reply: (answer: QuestionAnswer) => void): void {
  const { id, check } = question;
  if (question.type === 'authorize') {
    const answer = (result: { decision?: AuthorizationDecision; error?: string }) => reply({ type: 'authorized', id, check, ...result });
    if (!answerers.authorizer) return answer({ error: 'no authorizer' });
    answerers.authorizer.check(question.attributes).then(
      (decision) => answer({ decision }),
      (err: Error) => answer({ error: err.message }),
    );
    return;
  }
  const answer = (result: { mappings?: RestMapping[]; error?: string }) => reply({ type: 'mapped', id, check, ...result });
  if (!answerers.mapper) return answer({ error: 'API discovery is not available here' });
  answerers.mapper.restMappings(question.group, question.version, question.kind).then(
    (mappings) => answer({ mappings }),
    (err: Error) => answer({ error: err.message }),
  );
}
