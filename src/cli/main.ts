#!/usr/bin/env node
/**
 * The `portcullis` command: AdmissionSuites and AdmissionPolicies checked and run offline, with no
 * cluster, by the code that serves one (see evaluate.ts). `validate FILE...`, `test DIR|FILE...`,
 * `test --replay LOG FILE...` (replay.ts), `eval --suite FILE --object FILE ...`, `audit FILE...`
 * (audit.ts), `compile FILE...` (compile.ts), `import FILE...` (import.ts); `--help`, `--version`. Flags parsed with node:util parseArgs. `validate`
 * judges our kinds first as the API server does (crd-schema.ts), then as the operator's webhooks.
 * Other objects in the files (RBAC, ConfigMaps, CRDs) are read, not refused: `validate` lists them as skipped, `test`
 * and `eval` give them to the suites (params, Namespaces, the CRDs that name their kinds'
 * resources). Exit 0 when all is well, 1 when a suite or policy is refused, a test fails, a
 * replayed request is answered otherwise or an audited object would be denied (or a scanned one,
 * `scan FILE|DIR|-...`, scan.ts), 2 for a usage or input error (and an audit that could not read
 * all it should).
 * Writes results to stdout and errors to stderr; makes no network call, but for `validate --strict
 * --kubeconfig FILE`, which reads the OpenAPI schemas of that cluster to type-check against them
 * (without it, the built-in kinds' schemas bundled in schemas/ are read),
 * and `audit`, which reads (GET only, never writes) that cluster's objects.
 */
import fs from 'node:fs';
import { parseArgs } from 'node:util';
import { DEFAULTS } from '../config.ts';
import { logger } from '../log.ts';
import { VERSION } from '../version.ts';
import { OfflineCluster } from './evaluate.ts';
import { validateFiles, type StrictSchemas } from './validate.ts';
import { objectFiles, readDocuments, readObject, splitSuites } from './files.ts';
import { compare, describeRequest, parseAuditLog, replayable, skippedSummary, type Difference } from './replay.ts';
import { report, reportJson, reportJunit, runTestFile, testFiles, TEST_FILE_SUFFIX, type Row } from './testfile.ts';
import type { MergeSchemaSource } from '../registry/compile.ts';
import { expiryOf } from '../api/exceptions.ts';
import type { KubeConfig } from '@kubernetes/client-node';
import { errorMessage } from '../error-message.ts';

const QUIET = { error: () => undefined, warn: () => undefined, info: () => undefined, debug: () => undefined };

const USAGE = `portcullis ${VERSION}: AdmissionSuites and AdmissionPolicies checked and run offline, by the code that serves them in a cluster.

Usage:
  portcullis validate FILE...      check every AdmissionSuite and AdmissionPolicy in the files (YAML or
                                   JSON) as kubectl apply is checked: the CRDs' schema (unknown fields,
                                   types, enums, bounds, required, list types), their rules, then the
                                   operator's checks (CEL that compiles, handlers); every error, as
                                   FILE:LINE: document N: ..., in the API server's words and field paths;
                                   an unknown kind or version of admission.portcullis.dev and a file
                                   with no object are refused; other objects are listed as skipped
                  [--strict [--kube-version MINOR | --kubeconfig FILE]]
                                   also type-check each against the built-in kinds' OpenAPI schemas
                                   bundled for Kubernetes MINOR (1.35, 1.36 or 1.37; default the
                                   newest), no cluster, or those of the cluster of FILE (its CRDs
                                   included): print the type errors applying would warn about, and
                                   refuse (exit 1) what typeCheckErrors: Deny would, and a kind
                                   matched with no schema
  portcullis test DIR|FILE...      run test files (*${TEST_FILE_SUFFIX}, searched under a DIR); print a
                                   table of results and a diff of each failure; other FILEs (CRDs,
                                   params) are objects given to every test file, as --objects
                  [--handler-modules DIR]
                                   serve the handlers of the modules in DIR (as the operator's
                                   --handler-modules), what they look up given as the test files' objects
  portcullis dev MODULE [--suite FILE]... [--kubeconfig FILE]
                                   a handler module's dev loop: a local control plane (or FILE's
                                   cluster), the operator serving MODULE from source, the suites of
                                   the --suite files applied, the operator started again on each save
  portcullis test --replay LOG FILE|DIR... [-o text|json]
                                   ask the suites and AdmissionPolicies of the files again each write
                                   request an API server's audit log recorded at RequestResponse level,
                                   and print every one answered otherwise than recorded (exit 1 on any)
  portcullis scan --suites FILE|DIR... TARGET... [--old FILE|DIR]... [-o table|json|junit|sarif]
                  [--namespace NS] [--namespace-labels KEY=VALUE]...
                                   judge every object of the TARGETs (files, folders of .yaml, .yml and
                                   .json files, - for standard input: helm template ... | portcullis scan
                                   --suites FILE -) with the AdmissionSuites and AdmissionPolicies of the
                                   --suites files, as the API server would judge creating each (updating
                                   it, where an --old object has its apiVersion, kind, namespace and
                                   name); print per object and webhook called the answer, its warnings
                                   and audit annotations (exit 1 on a denial); a namespaceSelector reads
                                   the Namespaces of the files, else --namespace-labels
  portcullis eval --suite FILE --object FILE [--old-object FILE] [--operation CREATE|UPDATE|DELETE|CONNECT]
                  [--objects FILE]... [--namespace NS] [--resource PLURAL] [--user NAME] [--now TIME]
                  [--kubeconfig FILE]
                                   print the AdmissionReview response of each webhook called, the patched
                                   object and the request's result, as JSON (--suite files may hold
                                   AdmissionPolicies too); --now: the request's instant (RFC 3339),
                                   which AdmissionExceptions' expires is compared with (default: now);
                                   --kubeconfig: ApplyConfiguration mutations merge by the kinds'
                                   schemas that cluster publishes (without it, lists are replaced whole,
                                   with a warning)
  portcullis audit FILE|DIR... [--kubeconfig FILE] [--namespace NS] [-o text|json]
                                   judge the objects of a live cluster (FILE, else KUBECONFIG,
                                   ~/.kube/config) as the background audit does, with the suites and
                                   AdmissionPolicies of the files and nothing installed; print per
                                   webhook the objects evaluated and those a create of would be denied,
                                   with the messages (exit 1 on any); reads only, never writes
  portcullis compile FILE|DIR... [-o yaml|json]
                                   print the ValidatingAdmissionPolicies and bindings the suites' webhooks
                                   with enforcement Native or Auto become, and the MutatingAdmissionPolicies
                                   and bindings their Mutating ones written in MAP's form become (those
                                   that stay webhooks are named on stderr, with why), without the
                                   operator's ownership, to commit instead of the suite
  portcullis import FILE|DIR... [-o yaml|json]
                                   print the ValidatingAdmissionPolicies of the files, with their bindings,
                                   as AdmissionSuites that answer as the API server does for them (a
                                   webhook per binding), Kyverno ValidatingPolicies likewise, Kyverno
                                   ClusterPolicies with CEL rules (a webhook per rule; a namespaced Policy
                                   as AdmissionPolicies), and Gatekeeper ConstraintTemplates with
                                   K8sNativeValidation (a webhook per Constraint);
                                   what cannot be carried over is named on stderr, with why (exit 1)

Flags:
  --namespace NS                   the namespace of AdmissionPolicies that name none, as kubectl apply -n
                                   (default: default; for eval, the request's namespace); for audit,
                                   also the one namespace whose objects are judged (else all, and the
                                   cluster-scoped ones); for scan, also the namespace of namespaced
                                   objects that name none
  --namespace-labels KEY=VALUE     for scan, a label of every namespace no Namespace of the files gives
  -o, --output text|json           how test --replay and audit print their findings (default text);
                                   for test, text (default), json or junit (JUnit XML); for scan, table
                                   (default), json, junit or sarif (SARIF 2.1.0);
                                   for compile and import, yaml (default) or json
  --objects FILE                   objects the suites may read (Namespaces, LimitRanges, params) and CRDs,
                                   whose spec.names.plural is their kind's resource (test and eval)
  --operator-namespace NS          the operator's namespace, which bounds what a suite may name (${DEFAULTS.namespace})
  -h, --help                       print this
  --version                        print the version

Offline, \`authorizer\` checks are evaluation errors (no API server answers them), and params,
namespaces and LimitRanges are the objects given (the suite files' other objects, --objects).
A request's resource is the built-in kind's or a given CRD's plural (else guessed from the kind),
and its options the operation's CreateOptions, UpdateOptions or DeleteOptions, as the API server's.
An audited object is judged as a create of it (oldObject null, matchConditions and failurePolicy
as the webhook's); a check that reads what only a request has (the user, authorizer) is skipped.
Secrets are never audited.
Exit status: 0 all well, 1 a suite or policy refused, a test failed, a replayed request answered
otherwise or an audited or scanned object would be denied, 2 a usage or input error (for audit, also a kind
it could not list: its findings are incomplete).
`;

class UsageError extends Error {}

async function main(argv: string[]): Promise<number> {
  // The policy engine logs nothing a command's user needs; its warnings would mix with the output.
  logger.level = 'error';
  const { values, positionals } = parse(argv);
  if (values.help) return print(USAGE, 0);
  if (values.version) return print(`portcullis ${VERSION} (Node.js ${process.version})\n`, 0);
  const [command, ...rest] = positionals;
  const operatorNamespace = values['operator-namespace'] ?? DEFAULTS.namespace;
  switch (command) {
    case 'validate': {
      const schemas = values.strict ? await strictSchemas(values) : undefined;
      if (rest.length === 0) throw new UsageError('validate needs at least one FILE');
      return validateFiles(rest, operatorNamespace, values.namespace ?? 'default', schemas);
    }
    case 'test':
      return values.replay !== undefined ? replay(values.replay, rest, values, operatorNamespace) : test(rest, values);
    case 'scan':
      return scanCommand(rest, values, operatorNamespace);
    case 'eval':
      return evaluate(rest, values, operatorNamespace);
    case 'audit':
      return audit(rest, values, operatorNamespace);
    case 'compile':
      return compile(rest, values, operatorNamespace);
    case 'import':
      return importCommand(rest, values, operatorNamespace);
    case 'dev':
      return dev(rest, values);
    case undefined:
      throw new UsageError('no command given');
    default:
      throw new UsageError(`unknown command ${command}`);
  }
}

type Values = ReturnType<typeof parse>['values'];

function parse(argv: string[]) {
  try {
    return parseArgs({
      args: argv,
      allowPositionals: true,
      strict: true,
      options: {
        help: { type: 'boolean', short: 'h' },
        version: { type: 'boolean' },
        'operator-namespace': { type: 'string' },
        suite: { type: 'string', multiple: true },
        suites: { type: 'string', multiple: true },
        old: { type: 'string', multiple: true },
        'namespace-labels': { type: 'string', multiple: true },
        object: { type: 'string' },
        'old-object': { type: 'string' },
        operation: { type: 'string' },
        objects: { type: 'string', multiple: true },
        namespace: { type: 'string' },
        resource: { type: 'string' },
        user: { type: 'string' },
        strict: { type: 'boolean' },
        kubeconfig: { type: 'string' },
        'kube-version': { type: 'string' },
        output: { type: 'string', short: 'o' },
        replay: { type: 'string' },
        'handler-modules': { type: 'string' },
        now: { type: 'string' },
      },
    });
  } catch (err) {
    throw new UsageError(errorMessage(err).split('. ')[0]!);
  }
}

/** The cluster `kubeconfig` (else KUBECONFIG, ~/.kube/config) names; `needs` says for what, in the error when there is none. */
async function loadKubeConfig(kubeconfig: string | undefined, needs: string): Promise<KubeConfig> {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const config = new KubeConfig();
  try {
    if (kubeconfig) config.loadFromFile(kubeconfig);
    else config.loadFromDefault();
  } catch (err) {
    throw new UsageError(`${needs}: ${errorMessage(err)}`);
  }
  // With nothing configured, client-node falls back to http://localhost:8080, which it then refuses in words about TLS.
  const cluster = config.getCurrentCluster();
  const fallback = !kubeconfig && !process.env.KUBECONFIG && cluster?.name === 'cluster' && cluster.server === 'http://localhost:8080';
  if (!cluster || fallback) throw new UsageError(`${needs}: no cluster configured: give --kubeconfig FILE (or set KUBECONFIG, or write ~/.kube/config)`);
  return config;
}

/**
 * The schemas `validate --strict` type-checks against: the cluster's of --kubeconfig FILE (its CRDs
 * included), else, with no network call, the built-in kinds' bundled for --kube-version (default:
 * the newest bundled; src/apiserver/bundled-schemas.ts).
 */
async function strictSchemas(values: Values): Promise<StrictSchemas> {
  const kubeconfig = values.kubeconfig;
  if (kubeconfig !== undefined) {
    if (values['kube-version'] !== undefined) throw new UsageError("give --kube-version (bundled schemas) or --kubeconfig (a cluster's), not both");
    const [config, { OpenApiSchemas }] = await Promise.all([loadKubeConfig(kubeconfig, '--strict needs a cluster to read schemas from'), import('../apiserver/openapi.ts')]);
    return { source: new OpenApiSchemas(config), from: `the cluster of ${kubeconfig} publishes none` };
  }
  const { BundledSchemas, bundledKubeVersions } = await import('../apiserver/bundled-schemas.ts');
  const bundled = bundledKubeVersions();
  const minor = values['kube-version'] ?? bundled.at(-1)!;
  if (!bundled.includes(minor)) throw new UsageError(`--kube-version ${minor}: schemas are bundled for Kubernetes ${bundled.join(', ')}`);
  const schemas = new BundledSchemas(minor);
  return { source: schemas, from: `the built-in kinds of Kubernetes ${minor} have none: give --kubeconfig FILE to read a cluster's, its CRDs included` };
}

function outputFormat(values: Values): 'text' | 'json' {
  const output = values.output ?? 'text';
  if (output !== 'text' && output !== 'json') throw new UsageError(`-o must be text or json, not ${output}`);
  return output;
}

/** The suites, policies and other objects of FILE|DIR arguments (and --objects), refused ones printed to stderr. */
async function suitesOf(targets: string[], values: Values, operatorNamespace: string, what: string) {
  if (targets.length === 0) throw new UsageError(`${what} needs at least one FILE or DIR of AdmissionSuites and AdmissionPolicies`);
  const documents = targets.flatMap(objectFiles).flatMap(readDocuments);
  const split = splitSuites(documents, values.namespace ?? 'default');
  if (split.suites.length + split.policies.length === 0) throw new UsageError(`${targets.join(', ')}: no AdmissionSuite or AdmissionPolicy`);
  for (const file of values.objects ?? []) split.objects.push(...readDocuments(file));
  const refused = await new OfflineCluster(split.suites, split.objects, operatorNamespace, split.policies).refusals();
  if (refused.length) process.stderr.write(`${refused.map((r) => r.message).join('\n')}\n`);
  return { ...split, refused: refused.length > 0 };
}

async function compile(targets: string[], values: Values, operatorNamespace: string): Promise<number> {
  const output = values.output ?? 'yaml';
  if (output !== 'yaml' && output !== 'json') throw new UsageError(`-o must be yaml or json for compile, not ${output}`);
  const { suites, refused } = await suitesOf(targets, values, operatorNamespace, 'compile');
  if (refused) return 1;
  const { compileSuites, compiledText } = await import('./compile.ts');
  const compiled = compileSuites(suites, operatorNamespace);
  process.stdout.write(compiledText(compiled, output));
  for (const line of compiled.webhooks) process.stderr.write(`portcullis: ${line}\n`);
  return 0;
}

async function importCommand(targets: string[], values: Values, operatorNamespace: string): Promise<number> {
  const output = values.output ?? 'yaml';
  if (output !== 'yaml' && output !== 'json') throw new UsageError(`-o must be yaml or json for import, not ${output}`);
  if (targets.length === 0) throw new UsageError('import needs at least one FILE or DIR of ValidatingAdmissionPolicies and bindings');
  const { importFiles, importedText } = await import('./import.ts');
  const imported = await importFiles(targets, operatorNamespace);
  if (imported.found === 0) throw new UsageError(`${targets.join(', ')}: no ValidatingAdmissionPolicy, binding, Kyverno ValidatingPolicy, ClusterPolicy or Policy, or Gatekeeper ConstraintTemplate`);
  process.stdout.write(importedText([...imported.suites, ...imported.policies], output));
  for (const note of imported.notes) process.stderr.write(`portcullis: ${note}\n`);
  return imported.notes.length ? 1 : 0;
}

async function audit(targets: string[], values: Values, operatorNamespace: string): Promise<number> {
  const output = outputFormat(values);
  const { suites, policies, objects, refused } = await suitesOf(targets, values, operatorNamespace, 'audit');
  if (refused) return 1;
  const kubeConfig = await loadKubeConfig(values.kubeconfig, 'audit needs a cluster to read objects from');
  const { auditCluster, auditText, wouldDeny } = await import('./audit.ts');
  const found = await auditCluster({ kubeConfig, suites, policies, objects, operatorNamespace, ...(values.namespace ? { namespace: values.namespace } : {}) });
  process.stdout.write(output === 'json' ? `${JSON.stringify(found, null, 2)}\n` : auditText(found));
  for (const problem of found.problems) process.stderr.write(`portcullis: ${problem}\n`);
  // A denial found is an answer even when the audit is incomplete; an incomplete one that found none is not.
  if (found.webhooks.some((w) => w.objects.some((o) => wouldDeny(o.results)))) return 1;
  return found.problems.length ? 2 : 0;
}

async function replay(log: string, targets: string[], values: Values, operatorNamespace: string): Promise<number> {
  const output = outputFormat(values);
  const { suites, policies, objects, refused } = await suitesOf(targets, values, operatorNamespace, 'test --replay');
  if (refused) return 1;
  let text: string;
  try {
    text = fs.readFileSync(log, 'utf8');
  } catch (err) {
    throw new Error(`cannot read ${log}: ${(err as NodeJS.ErrnoException).code ?? errorMessage(err)}`);
  }
  const { requests, skipped, namespaces } = replayable(parseAuditLog(text, log));
  if (requests.length === 0) throw new Error(`${log}: no write request to replay${skipped.length ? ` (${skippedSummary(skipped).join('; ')})` : ''}`);
  // The Namespaces the files give, else as the log last recorded them (their labels select webhooks).
  const given = new Set(objects.filter((o) => o.kind === 'Namespace').map((o) => (o.metadata as { name?: string } | undefined)?.name));
  const cluster = new OfflineCluster(suites, [...objects, ...namespaces.filter((n) => !given.has(n.metadata?.name))], operatorNamespace, policies);
  const known = new Set([...given, ...namespaces.map((n) => n.metadata?.name)]);
  const unknown = [...new Set(requests.map((r) => r.scenario.namespace).filter((n): n is string => n !== undefined && !known.has(n)))].sort();
  // A namespaceSelector would see only the name label there: said, since it may be why a request differs.
  if (unknown.length) process.stderr.write(`portcullis: namespaces neither given (--objects) nor recorded in the log, taken with their name label only: ${unknown.join(', ')}\n`);
  const differences: Difference[] = [];
  let compared = 0;
  for (const request of requests) {
    const answer = compare(request.recorded, await cluster.evaluate(request.scenario));
    if (answer.reason) {
      skipped.push({ line: request.line, event: request.event, reason: answer.reason });
      continue;
    }
    compared++;
    if (answer.differs) differences.push({ line: request.line, request: describeRequest(request), ...answer.differs });
  }
  if (output === 'json') {
    const notReplayed = skipped.map((s) => ({ line: s.line, auditID: s.event.auditID, reason: s.reason }));
    process.stdout.write(`${JSON.stringify({ replayed: compared, differences, notReplayed }, null, 2)}\n`);
  } else {
    const lines = differences.map((d) => `${log}:${d.line}: ${d.request}\n  recorded: ${d.recorded}\n  replayed: ${d.replayed}`);
    lines.push(`${differences.length} of ${compared} replayed requests answered otherwise than recorded`);
    if (skipped.length) lines.push(`${skipped.length} not replayed:`, ...skippedSummary(skipped).map((l) => `  ${l}`));
    process.stdout.write(`${lines.join('\n')}\n`);
  }
  return differences.length ? 1 : 0;
}

async function test(targets: string[], values: Values): Promise<number> {
  if (targets.length === 0) throw new UsageError('test needs a DIR or FILE');
  const output = values.output ?? 'text';
  if (output !== 'text' && output !== 'json' && output !== 'junit') throw new UsageError(`-o must be text, json or junit for test, not ${output}`);
  // A FILE of Kubernetes objects (a CRD, params) rather than a test file: given to every test file, as --objects.
  const isObjects = (target: string) => !target.endsWith(TEST_FILE_SUFFIX) && fs.statSync(target, { throwIfNoEntry: false })?.isFile() && readDocuments(target).every((d) => typeof d.kind === 'string' && !('cases' in d));
  const objects = [...targets.filter(isObjects), ...(values.objects ?? [])].flatMap(readDocuments);
  const files = targets.filter((t) => !isObjects(t)).flatMap(testFiles);
  if (files.length === 0) throw new UsageError(`no *${TEST_FILE_SUFFIX} under ${targets.join(', ')}`);
  const rows: Row[] = [];
  // Handler modules (src/handler-modules): served as the operator serves them, each module in a worker of its own; a module refused is said on stderr.
  const dir = values['handler-modules'];
  const modules =
    dir === undefined
      ? undefined
      : await (await import('../handler-modules/serve.ts')).startHandlerModules(dir, { budgetMs: DEFAULTS.handlerBudgetMs, log: { ...QUIET, error: (message, fields) => process.stderr.write(`${message}: ${JSON.stringify(fields)}\n`) } });
  try {
    for (const file of files) rows.push(...(await runTestFile(file, { objects, ...(values.namespace ? { namespace: values.namespace } : {}) })));
  } finally {
    await modules?.close();
  }
  process.stdout.write(output === 'junit' ? reportJunit(rows) : output === 'json' ? reportJson(rows) : report(rows));
  return rows.every((r) => r.pass) ? 0 : 1;
}

/** `portcullis scan` (scan.ts, printed by scan-report.ts): exit 1 when an object would be denied. */
async function scanCommand(targets: string[], values: Values, operatorNamespace: string): Promise<number> {
  const { SCAN_OUTPUTS, scanReport } = await import('./scan-report.ts');
  const output = (values.output ?? 'table') as (typeof SCAN_OUTPUTS)[number];
  if (!SCAN_OUTPUTS.includes(output)) throw new UsageError(`-o must be ${SCAN_OUTPUTS.join(', ')} for scan, not ${output}`);
  if (!values.suites?.length) throw new UsageError('scan needs --suites FILE|DIR (the AdmissionSuites and AdmissionPolicies to judge with)');
  if (targets.length === 0) throw new UsageError('scan needs a FILE, DIR or - (standard input) of objects to judge');
  const namespaceLabels: Record<string, string> = {};
  for (const label of values['namespace-labels'] ?? []) {
    const [key, ...value] = label.split('=');
    if (!key || value.length === 0) throw new UsageError(`--namespace-labels takes KEY=VALUE, not ${label}`);
    namespaceLabels[key] = value.join('=');
  }
  const { scan } = await import('./scan.ts');
  const result = await scan({
    suites: values.suites,
    targets,
    old: values.old ?? [],
    ...(values.namespace ? { namespace: values.namespace } : {}),
    namespaceLabels,
    operatorNamespace,
    stdin: () => fs.readFileSync(0, 'utf8'),
  });
  process.stdout.write(scanReport(result, output));
  return result.objects.every((o) => o.allowed) ? 0 : 1;
}

/** `portcullis dev` (dev.ts): runs until SIGINT or SIGTERM. */
async function dev(rest: string[], values: Values): Promise<number> {
  if (rest.length !== 1) throw new UsageError("dev needs one MODULE (a module's folder or file)");
  const { startDev } = await import('./dev.ts');
  const loop = await startDev({ module: rest[0]!, suites: values.suite ?? [], kubeconfig: values.kubeconfig, say: (line) => process.stdout.write(`${line}\n`) });
  await new Promise<void>((resolve) => {
    process.once('SIGINT', () => resolve());
    process.once('SIGTERM', () => resolve());
  });
  await loop.stop();
  return 0;
}

/** With --kubeconfig, the kinds' schemas ApplyConfiguration mutations merge by, read from that cluster (its CRDs included); without, none (lists whole, with a warning). */
async function clusterSchemas(kubeconfig: string | undefined): Promise<{ mergeSchemas?: MergeSchemaSource }> {
  if (kubeconfig === undefined) return {};
  const [config, { OpenApiSchemas }] = await Promise.all([loadKubeConfig(kubeconfig, 'eval --kubeconfig reads the schemas of a cluster'), import('../apiserver/openapi.ts')]);
  const schemas = new OpenApiSchemas(config);
  return { mergeSchemas: { schema: (kind) => schemas.schema(kind) } };
}

async function evaluate(rest: string[], values: Values, operatorNamespace: string): Promise<number> {
  if (rest.length) throw new UsageError(`eval takes flags only, not ${rest.join(' ')}`);
  if (!values.suite?.length || !values.object) throw new UsageError('eval needs --suite FILE and --object FILE');
  const operation = values.operation?.toUpperCase();
  if (operation !== undefined && !['CREATE', 'UPDATE', 'DELETE', 'CONNECT'].includes(operation)) throw new UsageError(`--operation must be CREATE, UPDATE, DELETE or CONNECT, not ${values.operation}`);
  const object = readObject(values.object);
  const oldObject = values['old-object'] ? readObject(values['old-object']) : undefined;
  const documents = values.suite.flatMap(readDocuments);
  // The policies that name no namespace are the request's namespace's, as if applied there.
  const requestNamespace = values.namespace ?? ((object.metadata ?? oldObject?.metadata) as { namespace?: string } | undefined)?.namespace;
  const { suites, policies, objects } = splitSuites(documents, requestNamespace ?? 'default');
  if (suites.length + policies.length === 0) throw new UsageError(`${values.suite.join(', ')}: no AdmissionSuite or AdmissionPolicy`);
  for (const file of values.objects ?? []) objects.push(...readDocuments(file));
  // The instant of the request, which AdmissionExceptions' expires is compared with (as a test file's now:).
  const now = values.now === undefined ? undefined : expiryOf(values.now);
  if (values.now !== undefined && now === undefined) throw new UsageError(`--now must be an RFC 3339 time such as 2026-12-31T00:00:00Z, not ${values.now}`);
  const cluster = new OfflineCluster(suites, objects, operatorNamespace, policies, { ...(now !== undefined ? { now } : {}), ...(await clusterSchemas(values.kubeconfig)) });
  const refused = await cluster.refusals();
  if (refused.length) {
    process.stderr.write(`${refused.map((r) => r.message).join('\n')}\n`);
    return 1;
  }
  const evaluation = await cluster.evaluate({
    object: operation === 'DELETE' ? null : object,
    oldObject: operation === 'DELETE' ? (oldObject ?? object) : oldObject,
    ...(operation ? { operation: operation as 'CREATE' } : {}),
    ...(values.namespace ? { namespace: values.namespace } : {}),
    ...(values.resource ? { resource: values.resource } : {}),
    ...(values.user ? { userInfo: { username: values.user, groups: ['system:authenticated'] } } : {}),
  });
  const output = {
    webhooks: evaluation.webhooks.map((w) => ({
      name: w.fullName,
      type: w.type,
      called: w.called,
      ...(w.reason ? { reason: w.reason } : {}),
      ...(w.policies ? { policies: w.policies } : {}),
      ...(w.review ? { review: w.review } : {}),
    })),
    allowed: evaluation.allowed,
    ...(evaluation.message ? { message: evaluation.message } : {}),
    ...(evaluation.patchedObject ? { patchedObject: evaluation.patchedObject } : {}),
  };
  process.stdout.write(`${JSON.stringify(output, null, 2)}\n`);
  return 0;
}

function print(text: string, code: number): number {
  process.stdout.write(text);
  return code;
}

main(process.argv.slice(2)).then(
  (code) => (process.exitCode = code),
  (err: unknown) => {
    process.stderr.write(`portcullis: ${errorMessage(err)}${err instanceof UsageError ? '\n(portcullis --help says how to use it)' : ''}\n`);
    process.exitCode = 2;
  },
);
