/**
 * audit: the background audit as the operator runs it. Follows the suite and policy registries (a
 * target rebuilt on a new generation, dropped when no longer served), scans only while this replica
 * leads, and answers `status.audit`, asking for the status write when it changes. What an author may
 * list is asked with the operator's own identity (SubjectAccessReviews, access.ts), never with the
 * test's stand-in for `authorizer`. Wired by src/manager/operator.ts; owns no watch of its own.
 */
import type { AdmissionPolicy, AdmissionSuite, AuditStatus, SuiteStatus } from '../api/types.ts';
import type { PolicyLimits } from '../api/validate.ts';
import type { OperatorConfig } from '../config.ts';
import type { Kube } from '../apiserver/client.ts';
import type { Logger } from '../log.ts';
import type { CompileContext } from '../registry/compile.ts';
import { AuditScanner } from './scanner.ts';
import { policyTarget, suiteTargets, type AuditTarget, type CheckResult } from './targets.ts';
import type { ObjectRef } from './results.ts';
import { ReportWriter } from './writer.ts';
import { ReviewedListAccess, type ListAccess } from './access.ts';
import { SubjectAccessReviewer } from '../apiserver/authorizer.ts';
import { errorMessage } from '../error-message.ts';

export interface AuditorDeps {
  kube: Kube;
  log: Logger;
  config: OperatorConfig;
  /** What targets are compiled against (the registry's view, params and discovery; no authorizer: checks that ask it are skipped). */
  context: CompileContext;
  limits: PolicyLimits;
  namespaceLabels: (namespace: string) => Record<string, string> | undefined;
  /** Asks for the status write of a suite (its name) or of the AdmissionPolicies. */
  statusChanged: (target: { suite: string } | { policies: true }) => void;
  /** Whether an author may list what a target judges (SubjectAccessReviews with the operator's identity by default). */
  access?: ListAccess;
}

export class Auditor {
  readonly scanner: AuditScanner;
  private readonly deps: AuditorDeps;
  /** owner key (`suite/<name>`, `policy/<ns>/<name>`) -> its generation and targets. */
  private readonly owners = new Map<string, { generation: number; targets: AuditTarget[] }>();

  constructor(deps: AuditorDeps) {
    this.deps = deps;
    const writers = [new ReportWriter(deps.kube, deps.log, 'openreports'), ...(deps.config.policyReports ? [new ReportWriter(deps.kube, deps.log, 'policyreports')] : [])];
    const access = deps.access ?? new ReviewedListAccess(new SubjectAccessReviewer(deps.kube.config));
    this.scanner = new AuditScanner(deps.kube, deps.log, writers, deps.namespaceLabels, { intervalMs: deps.config.auditIntervalMs }, access);
    this.scanner.onSummaries = (targets) => {
      const suites = new Set(targets.filter((t) => t.source.kind === 'AdmissionSuite').map((t) => t.source.name));
      for (const suite of suites) deps.statusChanged({ suite });
      if (targets.some((t) => t.source.kind === 'AdmissionPolicy')) deps.statusChanged({ policies: true });
    };
  }

  /** A suite as the registry now serves it (undefined: gone or not served). */
  suite(name: string, suite: AdmissionSuite | undefined): void {
    this.own(`suite/${name}`, suite?.metadata.generation ?? 0, suite && (() => suiteTargets(suite, this.deps.config, this.deps.context)));
  }

  policy(namespace: string, name: string, policy: AdmissionPolicy | undefined): void {
    this.own(`policy/${namespace}/${name}`, policy?.metadata.generation ?? 0, policy && (() => [policyTarget(policy, this.deps.limits, this.deps.config, this.deps.context)].filter((t): t is AuditTarget => t !== undefined)));
  }

  private own(key: string, generation: number, build: (() => AuditTarget[]) | undefined): void {
    const known = this.owners.get(key);
    if (!build) {
      if (!known) return;
      this.owners.delete(key);
    } else {
      if (known?.generation === generation) return;
      let targets: AuditTarget[] = [];
      try {
        targets = build();
      } catch (err) {
        this.deps.log.warn('audit: targets could not be built', { owner: key, error: errorMessage(err) });
      }
      this.owners.set(key, { generation, targets });
    }
    this.scanner.setTargets([...this.owners.values()].flatMap((o) => o.targets));
  }

  /** A request suite `suite`'s `webhook` allowed with Warn or Audit failures (the admission path's observers). */
  live(suite: string, webhook: string, ref: ObjectRef, results: CheckResult[]): void {
    this.scanner.live(`suite/${suite}/${webhook}`, ref, results);
  }

  leading(leading: boolean): void {
    if (leading) this.scanner.start();
    else void this.scanner.stop();
  }

  stop(): Promise<void> {
    return this.scanner.stop();
  }

  /** status.audit of a suite: in all and per audited webhook (undefined when it has nothing audited). */
  suiteStatus(name: string): SuiteStatus['audit'] | undefined {
    const targets = this.owners.get(`suite/${name}`)?.targets ?? [];
    if (targets.length === 0) return undefined;
    const webhooks = targets.map((t) => ({ name: t.source.webhook!, ...this.scanner.summary(t.key)! }));
    const failing = this.suiteFailing(targets);
    const lastRuns = webhooks.map((w) => w.lastRun);
    const message = webhooks.map((w) => w.message).find((m) => m);
    return {
      evaluated: Math.max(...webhooks.map((w) => w.evaluated)),
      failing,
      ...(lastRuns.every((r) => r) ? { lastRun: lastRuns.sort()[0] } : {}),
      ...(message ? { message } : {}),
      webhooks: webhooks.map(({ name: n, evaluated, failing: f }) => ({ name: n, evaluated, failing: f })),
    };
  }

  /** Objects failing any of a suite's webhooks, each counted once. */
  private suiteFailing(targets: AuditTarget[]): number {
    if (targets.length === 1) return this.scanner.summary(targets[0]!.key)!.failing;
    return this.scanner.results.failingObjects(targets.map((t) => t.key));
  }

  policyStatus(namespace: string, name: string): AuditStatus | undefined {
    const target = this.owners.get(`policy/${namespace}/${name}`)?.targets[0];
    return target && this.scanner.summary(target.key);
  }
}
