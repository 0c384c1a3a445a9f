/** The `portcullis` command run as a user runs it: its own process (Node 24, as `npm start` runs the operator), stdout, stderr and exit code. */
import { spawn } from 'node:child_process';
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
