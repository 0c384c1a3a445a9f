/** A temporary folder of small files a test writes (modules, suites, test files); the caller removes it, or the OS's tmp cleaning does. */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/** A new folder under the OS's tmp holding `files` (path under it -> text). */
export function tempFolder(prefix: string, files: Record<string, string>): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  for (const [name, text] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), text);
  }
  return dir;
}
