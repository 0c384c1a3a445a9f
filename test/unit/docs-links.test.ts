/**
 * The docs' links as a reader clicks them on a forge: every relative link in docs/**\/*.md and
 * README.md names a file or folder of the repository, every `#anchor` is a heading (GitHub slug)
 * or an explicit anchor of its target page, and no link leaves the repository (`../` past its
 * root, ../shared, an absolute path), which a reader who cloned it does not have. External
 * http(s) links are not fetched (no network in the tests). tools/markdown-links.ts reads the
 * Markdown; the helpers' own cases below show it finds what a reader would notice.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { anchorsOf, githubSlug, headingsOf, linksOf } from '../../tools/markdown-links.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** The pages checked: README.md and every .md under docs/, but the site generator's own folder. */
export function checkedPages(root: string = ROOT): string[] {
  const docs = fs
    .readdirSync(path.join(root, 'docs'), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.md'))
    .map((entry) => path.relative(root, path.join(entry.parentPath, entry.name)))
    .filter((file) => !file.split(path.sep).some((part) => part === '.vitepress' || part === 'node_modules'));
  return ['README.md', ...docs.sort()];
}

/** The repository as the check sees it: a file's text (undefined for a folder or nothing), and whether a path exists. */
type Tree = { read(file: string): string | undefined; exists(file: string): boolean };

const disk = (root: string): Tree => ({
  read: (file) => {
    const absolute = path.join(root, file);
    return fs.existsSync(absolute) && fs.statSync(absolute).isFile() ? fs.readFileSync(absolute, 'utf8') : undefined;
  },
  exists: (file) => fs.existsSync(path.join(root, file)),
});

/** What is wrong with each link of a page, as `file:line: target: why`; empty when every link holds. */
export function brokenLinks(file: string, tree: Tree = disk(ROOT)): string[] {
  const text = tree.read(file);
  if (text === undefined) return [`${file}: not found`];
  const problems: string[] = [];
  for (const { line, target } of linksOf(text)) {
    const why = checkLink(file, target, tree);
    if (why) problems.push(`${file}:${line}: ${target}: ${why}`);
  }
  return problems;
}

function checkLink(file: string, target: string, tree: Tree): string | undefined {
  if (/^(https?:|mailto:)/i.test(target)) return undefined; // external: not fetched
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return 'a scheme a reader cannot follow';
  if (target.includes('../shared') || /(^|\/)shared\/design\//.test(target)) return 'points at ../shared, which is not in the repository: link the copy in docs/design/';
  const hash = target.indexOf('#');
  const pathPart = decodeURIComponent(hash >= 0 ? target.slice(0, hash) : target);
  const anchor = hash >= 0 ? decodeURIComponent(target.slice(hash + 1)) : undefined;
  if (pathPart.startsWith('/')) return 'an absolute path: on a forge it leaves the repository; write it relative to this page';
  const resolved = path.normalize(path.join(path.dirname(file), pathPart.split('?')[0]!));
  if (resolved === '..' || resolved.startsWith(`..${path.sep}`) || path.isAbsolute(resolved)) return 'leaves the repository';
  if (pathPart && !tree.exists(resolved)) return `no such file in the repository (${resolved})`;
  if (anchor === undefined) return undefined;
  const page = pathPart ? resolved : file;
  if (!page.endsWith('.md')) return /^L\d+(-L\d+)?$/.test(anchor) ? undefined : `#${anchor} in a file that is not a Markdown page`;
  const anchors = anchorsOf(tree.read(page) ?? '');
  return anchors.has(anchor) ? undefined : `no heading or anchor #${anchor} in ${page}`;
}

describe('docs: every link and anchor resolves in the repository', function () {
  it('reads links, headings and anchors as a forge does', function () {
    expect(githubSlug('Enforced by the API server itself: enforcement: Native')).to.equal('enforced-by-the-api-server-itself-enforcement-native');
    expect(headingsOf('# A\n## Two commands\n```sh\n# not a heading\n```\n## Two commands\n### `--type-check-errors=Deny`, and <a id="x"></a>more').map((h) => h.slug)).to.deep.equal([
      'a',
      'two-commands',
      'two-commands-1',
      '--type-check-errorsdeny-and-more',
    ]);
    expect([...anchorsOf('## <a id="spec"></a>`spec`\nsee `<a id="not-one">`')]).to.deep.equal(['spec']);
    expect(linksOf('[a](x.md#y) and `[b](code.md)` and ![i](img.png "t")\n```\n[c](fenced.md)\n```\n[d]: ref.md\n<a href="h.md">h</a>').map((l) => l.target)).to.deep.equal(['x.md#y', 'img.png', 'ref.md', 'h.md']);
  });

  it('flags a dead file, a missing anchor, a path out of the repository and ../shared', function () {
    const pages: Record<string, string> = {
      'docs/a.md': '# A\n## Real heading\n[ok](b.md#b) [self](#real-heading) [dead](missing.md) [anchor](b.md#nope) [out](../../etc/passwd) [shared](../../shared/design/admission-suite.md) [abs](/docs/b.md) [web](https://example.com/x)',
      'docs/b.md': '# B\n<a id="b"></a>',
    };
    const tree = { read: (f: string) => pages[f], exists: (f: string) => f in pages };
    expect(brokenLinks('docs/a.md', tree).map((p) => p.split(': ').slice(1).join(': '))).to.deep.equal([
      'missing.md: no such file in the repository (docs/missing.md)',
      'b.md#nope: no heading or anchor #nope in docs/b.md',
      '../../etc/passwd: leaves the repository',
      '../../shared/design/admission-suite.md: points at ../shared, which is not in the repository: link the copy in docs/design/',
      '/docs/b.md: an absolute path: on a forge it leaves the repository; write it relative to this page',
    ]);
    // The anchor check on a page that exists: README.md has no such heading.
    const onDisk = disk(ROOT);
    const page = { read: (f: string) => (f === 'docs/x.md' ? '[r](../README.md#no-such-heading-here) [t](../README.md#portcullis)' : onDisk.read(f)), exists: onDisk.exists };
    expect(brokenLinks('docs/x.md', page)).to.deep.equal(['docs/x.md:1: ../README.md#no-such-heading-here: no heading or anchor #no-such-heading-here in README.md']);
  });

  it('docs/ holds the pages its index maps', function () {
    const pages = checkedPages();
    for (const page of ['docs/index.md', 'docs/getting-started.md', 'docs/concepts.md', 'docs/operating.md', 'docs/conditions.md', 'docs/cli.md', 'docs/benchmarks.md', 'docs/design/contract.md', 'docs/reference/README.md']) {
      expect(pages, `${page} is missing`).to.include(page);
    }
  });

  for (const page of checkedPages()) {
    it(`${page}: no dead link, no missing anchor, nothing outside the repository`, function () {
      expect(brokenLinks(page), 'fix each link (file:line: target: why)').to.deep.equal([]);
    });
  }
});
