/**
 * The API server's audit log as the tests read it: every event written so far, in order. Owns
 * reading the log; what an event means is each test's.
 *
 * The API server rotates its log (lumberjack: at 100 MB unless --audit-log-maxsize says otherwise,
 * the old file kept beside it as `audit-<time>.log`), and the shared control plane of one test run
 * writes more than that: a test that read only the current file lost the events written before
 * the rotation. Read here, the backups come first (their names sort by time), then the current file.
 */
import fs from 'node:fs';
import path from 'node:path';

/** The log's files, oldest first: the rotated backups, then the file the API server writes now. */
function logFiles(logPath: string): string[] {
  const dir = path.dirname(logPath);
  const ext = path.extname(logPath);
  const stem = path.basename(logPath, ext);
  const backups = fs
    .readdirSync(dir)
    .filter((name) => name.startsWith(`${stem}-`) && name.endsWith(ext))
    .sort()
    .map((name) => path.join(dir, name));
  return [...backups, ...(fs.existsSync(logPath) ? [logPath] : [])];
}

/** Everything written so far, rotated files included: append-only, so a length taken now is a mark to read on from. */
export function auditLogBytes(logPath: string): Buffer {
  return Buffer.concat(logFiles(logPath).map((file) => fs.readFileSync(file)));
}

/** The events of `bytes` (the whole log, or what followed a mark), skipping a last line still being written. */
export function auditEventsOf<T>(bytes: Buffer): T[] {
  const lines = bytes.toString('utf8').split('\n');
  lines.pop(); // '' after the last newline, or a line the API server has not finished
  return lines.filter(Boolean).map((line) => JSON.parse(line) as T);
}

/** Every event written so far (file by file: the whole log of a test run is more than one string may hold). */
export function auditEvents<T>(logPath: string): T[] {
  return logFiles(logPath).flatMap((file) => auditEventsOf<T>(fs.readFileSync(file)));
}
