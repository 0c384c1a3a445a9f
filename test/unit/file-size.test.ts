/**
 * No source file over 500 lines (issue 54): every file under src/ is held to it, and the test names
 * each file that has more, with its count. Owns only that count; where a file is split, and the
 * imports that follow, are the files' own (and imports.test.ts').
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));
/** The most lines a source file may have: past it, a file holds more than one reason to change. */
const MOST_LINES = 500;

/** A file's lines as `wc -l` counts them (a last line without its newline counts too). */
function lineCount(text: string): number {
  if (text === '') return 0;
  return text.split('\n').length - (text.endsWith('\n') ? 1 : 0);
}

/** Every file under `dir` with more than MOST_LINES lines, as `path (N lines)`, relative to `base`. */
function overLimit(dir: string, base: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const full = path.join(dir, entry.name);
    if (entry.isDirectory()) return overLimit(full, base);
    const lines = lineCount(readFileSync(full, 'utf8'));
    return lines > MOST_LINES ? [`${path.relative(base, full)} (${lines} lines)`] : [];
  });
}

describe('source file size', () => {
  it(`has no file under src/ over ${MOST_LINES} lines`, () => {
    expect(overLimit(path.join(ROOT, 'src'), ROOT), `files over ${MOST_LINES} lines`).to.deep.equal([]);
  });

  it('names a file over the limit, and counts lines as wc -l does (the check can fail)', () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'file-size-'));
    try {
      writeFileSync(path.join(dir, 'long.ts'), 'x\n'.repeat(MOST_LINES + 1));
      writeFileSync(path.join(dir, 'at-limit.ts'), 'x\n'.repeat(MOST_LINES - 1) + 'x');
      expect(overLimit(dir, dir)).to.deep.equal([`long.ts (${MOST_LINES + 1} lines)`]);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
