/** The `portcullis` command run as a user runs it: its own process (Node 24, as `npm start` runs the operator), stdout, stderr and exit code. */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as yaml from 'js-yaml';
import { fileURLToPath } from 'node:url';

export const REPO = fileURLToPath(new URL('../../', import.meta.url));
const CLI = fileURLToPath(new URL('../../src/cli/main.ts', import.meta.url));

export interface CliResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `input`, when given, is the command's standard input (as `helm template ... | portcullis scan -` gives it). */
export function runCli(args: string[], cwd = REPO, input?: string): Promise<CliResult> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [CLI, ...args], { cwd, stdio: ['pipe', 'pipe', 'pipe'] });
    // A command that exits before reading its input (a usage error) closes the pipe: its exit code and stderr say so, not EPIPE.
    child.stdin.on('error', () => undefined);
    child.stdin.end(input ?? '');
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk) => (stdout += chunk));
    child.stderr.on('data', (chunk) => (stderr += chunk));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

/**
 * A directory of its own for a describe block (made before its tests, removed after), and `write`,
 * which puts objects in a new YAML file there and gives its path.
 */
export function scratchFiles(prefix: string): { dir: () => string; write: (objects: unknown[]) => string } {
  let dir = '';
  let count = 0;
  before(() => (dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix))));
  after(() => fs.rmSync(dir, { recursive: true, force: true }));
  return {
    dir: () => dir,
    write: (objects) => {
      const file = path.join(dir, `${++count}.yaml`);
      fs.writeFileSync(file, objects.map((o) => yaml.dump(o)).join('---\n'));
      return file;
    },
  };
}

/** `portcullis eval` of `objectFile` against the suites of `suiteFile`: the answer and every webhook's warnings. */
export async function evalAnswer(suiteFile: string, objectFile: string, extra: string[] = []): Promise<{ allowed: boolean; message: string | undefined; warnings: string[] }> {
  const run = await runCli(['eval', '--suite', suiteFile, '--object', objectFile, ...extra]);
  const result = JSON.parse(run.stdout) as { allowed: boolean; message?: string; webhooks: { review?: { response: { warnings?: string[] } } }[] };
  return { allowed: result.allowed, message: result.message, warnings: result.webhooks.flatMap((w) => w.review?.response.warnings ?? []) };
}
