/**
 * The docs site builds: VitePress (docs/.vitepress/config.ts) renders every page of docs/ into a
 * temporary folder, as CI would publish it, and each page's headings keep on the site the anchors
 * they have on a forge, so a link written once (`concepts.md#params`) lands on both. A page the
 * generator cannot compile (raw `<tag>` text outside code, a dead link between pages) fails the build.
 */
import { expect } from 'chai';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { headingsOf } from '../../tools/markdown-links.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const VITEPRESS = path.join(ROOT, 'node_modules/vitepress/bin/vitepress.js');

/** `vitepress build docs --outDir out`, with this Node; resolves with its output and exit code. */
function build(outDir: string): Promise<{ code: number; output: string; seconds: number }> {
  const started = performance.now();
  return new Promise((resolve) => {
    execFile(process.execPath, [VITEPRESS, 'build', 'docs', '--outDir', outDir], { cwd: ROOT, maxBuffer: 16 * 1024 * 1024 }, (err, stdout, stderr) => {
      const code = err ? ((err as { code?: number }).code ?? 1) : 0;
      resolve({ code: typeof code === 'number' ? code : 1, output: `${stdout}${stderr}`, seconds: (performance.now() - started) / 1000 });
    });
  });
}

describe('docs: the site builds', function () {
  this.timeout(600_000);
  let outDir: string;
  let result: { code: number; output: string; seconds: number };

  before(async function () {
    outDir = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-docs-'));
    result = await build(outDir);
  });
  after(() => fs.rmSync(outDir, { recursive: true, force: true }));

  const pages = fs
    .readdirSync(path.join(ROOT, 'docs'), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.md') && !entry.parentPath.includes('.vitepress'))
    .map((entry) => path.relative(path.join(ROOT, 'docs'), path.join(entry.parentPath, entry.name)));

  it('vitepress build docs succeeds', function () {
    expect(result.code, `the build failed:\n${result.output}`).to.equal(0);
    // Its time is reported, not asserted: it depends on the machine and on what else runs.
    console.log(`      the docs built in ${result.seconds.toFixed(1)} s`);
  });

  it('renders every page of docs/, with the anchors its headings have on a forge', function () {
    expect(result.code, 'the build failed (above)').to.equal(0);
    const missing: string[] = [];
    for (const page of pages) {
      const html = path.join(outDir, page.replace(/\.md$/, '.html'));
      if (!fs.existsSync(html)) {
        missing.push(`${page}: not rendered`);
        continue;
      }
      const text = fs.readFileSync(html, 'utf8');
      for (const heading of headingsOf(fs.readFileSync(path.join(ROOT, 'docs', page), 'utf8'))) {
        if (heading.level > 1 && !text.includes(`id="${heading.slug}"`)) missing.push(`${page}: #${heading.slug} (${heading.text})`);
      }
    }
    expect(missing).to.deep.equal([]);
  });
});
