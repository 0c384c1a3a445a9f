#!/usr/bin/env node
/**
 * The `portcullis` command: suites checked and run offline, with no cluster, by the code that
 * serves one (see evaluate.ts). `validate FILE...`, `test DIR|FILE...`, `eval --suite FILE
 * --object FILE ...`; `--help`, `--version`. Flags parsed with node:util parseArgs. Exit 0 when
 * all is well, 1 when a suite is refused or a test fails, 2 for a usage or input error.
 * Writes results to stdout and errors to stderr; makes no network call.
 */
import { parseArgs } from 'node:util';
import { DEFAULTS } from '../config.ts';
import { logger } from '../log.ts';
import { VERSION } from '../version.ts';
import { OfflineCluster } from './evaluate.ts';
import { readDocuments, readObject, splitSuites } from './files.ts';
import { report, runTestFile, testFiles, TEST_FILE_SUFFIX, type Row } from './testfile.ts';

const USAGE = `portcullis ${VERSION}: AdmissionSuites checked and run offline, by the code that serves them in a cluster.

Usage:
  portcullis validate FILE...      compile and check every AdmissionSuite in the files (YAML or JSON);
                                   refused with the same messages and field paths as kubectl apply
  portcullis test DIR|FILE...      run test files (*${TEST_FILE_SUFFIX}, searched under a DIR); print a
                                   table of results and a diff of each failure
  portcullis eval --suite FILE --object FILE [--old-object FILE] [--operation CREATE|UPDATE|DELETE|CONNECT]
                  [--objects FILE]... [--namespace NS] [--resource PLURAL] [--user NAME]
                                   print the AdmissionReview response of each webhook called, the patched
                                   object and the request's result, as JSON

Flags:
  --operator-namespace NS          the operator's namespace, which bounds what a suite may name (${DEFAULTS.namespace})
  -h, --help                       print this
  --version                        print the version

Offline, \`authorizer\` checks are evaluation errors (no API server answers them), and params,
namespaces and LimitRanges are the objects given (the suite files' other objects, --objects).
Exit status: 0 all well, 1 a suite refused or a test failed, 2 a usage or input error.
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
    case 'validate':
      return validate(rest, operatorNamespace);
    case 'test':
      return test(rest);
    case 'eval':
      return evaluate(rest, values, operatorNamespace);
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
        object: { type: 'string' },
        'old-object': { type: 'string' },
        operation: { type: 'string' },
        objects: { type: 'string', multiple: true },
        namespace: { type: 'string' },
        resource: { type: 'string' },
        user: { type: 'string' },
      },
    });
  } catch (err) {
    throw new UsageError((err as Error).message.split('. ')[0]!);
  }
}

async function validate(files: string[], operatorNamespace: string): Promise<number> {
  if (files.length === 0) throw new UsageError('validate needs at least one FILE');
  let refused = 0;
  for (const file of files) {
    const { suites } = splitSuites(readDocuments(file));
    if (suites.length === 0) throw new UsageError(`${file} holds no AdmissionSuite`);
    const refusals = new Map((await new OfflineCluster(suites, [], operatorNamespace).refusals()).map((r) => [r.suite, r.message]));
    for (const suite of suites) {
      const message = refusals.get(suite.metadata?.name);
      if (message !== undefined) refused++;
      process.stdout.write(message === undefined ? `${file}: AdmissionSuite "${suite.metadata?.name}" is valid\n` : `${file}: ${message}\n`);
    }
  }
  return refused ? 1 : 0;
}

async function test(targets: string[]): Promise<number> {
  if (targets.length === 0) throw new UsageError('test needs a DIR or FILE');
  const files = targets.flatMap(testFiles);
  if (files.length === 0) throw new UsageError(`no *${TEST_FILE_SUFFIX} under ${targets.join(', ')}`);
  const rows: Row[] = [];
  for (const file of files) rows.push(...(await runTestFile(file)));
  process.stdout.write(report(rows));
  return rows.every((r) => r.pass) ? 0 : 1;
}

async function evaluate(rest: string[], values: Values, operatorNamespace: string): Promise<number> {
  if (rest.length) throw new UsageError(`eval takes flags only, not ${rest.join(' ')}`);
  if (!values.suite?.length || !values.object) throw new UsageError('eval needs --suite FILE and --object FILE');
  const operation = values.operation?.toUpperCase();
  if (operation !== undefined && !['CREATE', 'UPDATE', 'DELETE', 'CONNECT'].includes(operation)) throw new UsageError(`--operation must be CREATE, UPDATE, DELETE or CONNECT, not ${values.operation}`);
  const documents = values.suite.flatMap(readDocuments);
  const { suites, objects } = splitSuites(documents);
  if (suites.length === 0) throw new UsageError(`${values.suite.join(', ')}: no AdmissionSuite`);
  for (const file of values.objects ?? []) objects.push(...readDocuments(file));
  const cluster = new OfflineCluster(suites, objects, operatorNamespace);
  const refused = await cluster.refusals();
  if (refused.length) {
    process.stderr.write(`${refused.map((r) => r.message).join('\n')}\n`);
    return 1;
  }
  const object = readObject(values.object);
  const oldObject = values['old-object'] ? readObject(values['old-object']) : undefined;
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
    process.stderr.write(`portcullis: ${(err as Error).message}${err instanceof UsageError ? '\n(portcullis --help says how to use it)' : ''}\n`);
    process.exitCode = 2;
  },
);
