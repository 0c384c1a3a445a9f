/**
 * docs/conditions.md against the code: every condition type and reason the operator writes on an
 * AdmissionSuite's or AdmissionPolicy's status (each `{ type: '...', status: '...', reason: ... }`
 * literal in src/, a ternary's reasons included), and every Event reason it records
 * (`events.record(suite, 'Warning', 'Reason', ...)`), has its own heading on that page, and each
 * reason's section names the condition types it is written on. A reason added to the code
 * without its cause and fix on the page fails here, naming it.
 */
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { headingsOf } from '../../tools/markdown-links.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const PAGE = 'docs/conditions.md';

export type Written = { types: Map<string, Set<string>>; reasons: Map<string, Set<string>>; events: Map<string, Set<string>> };

/** The conditions and Events a source text writes: type -> files, reason -> the types it is written on, Event reason -> files. */
export function writtenIn(sources: { file: string; text: string }[]): Written {
  const written: Written = { types: new Map(), reasons: new Map(), events: new Map() };
  const add = (map: Map<string, Set<string>>, key: string, value: string) => map.set(key, (map.get(key) ?? new Set()).add(value));
  for (const { file, text } of sources) {
    // A condition literal: type, status and reason, in that order; the reason a string or an expression of strings.
    for (const match of text.matchAll(/\{\s*type:\s*'([A-Za-z]+)',\s*status:\s*'(?:True|False|Unknown)',\s*reason:\s*((?:'[^']*'|[^,}'])+)/g)) {
      const type = match[1]!;
      add(written.types, type, file);
      const reasons = [...match[2]!.matchAll(/'([^']*)'/g)].map((m) => m[1]!);
      if (reasons.length === 0) throw new Error(`${file}: the reason of a ${type} condition is not a string literal (${match[2]!.trim()}): write its reasons as literals, or teach this test to read them`);
      for (const reason of reasons) add(written.reasons, reason, type);
    }
    for (const match of text.matchAll(/events\.record\(\s*[^,]+,\s*'(?:Normal|Warning)',\s*'([A-Za-z]+)'/g)) add(written.events, match[1]!, file);
  }
  return written;
}

function sourcesUnder(dir: string): { file: string; text: string }[] {
  return fs
    .readdirSync(path.join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && entry.name.endsWith('.ts'))
    .map((entry) => {
      const file = path.relative(ROOT, path.join(entry.parentPath, entry.name));
      return { file, text: fs.readFileSync(path.join(ROOT, file), 'utf8') };
    });
}

/** The page's sections: each `##` heading's text, with the `###` headings under it and each one's body. */
export function sectionsOf(markdown: string): Map<string, Map<string, string>> {
  const lines = markdown.split('\n');
  const headings = headingsOf(markdown);
  const sections = new Map<string, Map<string, string>>();
  let current: Map<string, string> | undefined;
  headings.forEach((heading, i) => {
    if (heading.level === 2) sections.set(heading.text, (current = new Map()));
    else if (heading.level === 3 && current) {
      const end = headings.slice(i + 1).find((h) => h.level <= 3)?.line ?? lines.length + 1;
      current.set(heading.text, lines.slice(heading.line, end - 1).join('\n'));
    }
  });
  return sections;
}

/** What the page leaves out of what the code writes, one line each; empty when it documents everything. */
export function undocumented(written: Written, markdown: string): string[] {
  const sections = sectionsOf(markdown);
  const types = sections.get('Condition types') ?? new Map<string, string>();
  const reasons = sections.get('Reasons') ?? new Map<string, string>();
  const events = sections.get('Events') ?? new Map<string, string>();
  const missing: string[] = [];
  for (const type of written.types.keys()) if (!types.has(type)) missing.push(`condition type ${type}: no "### ${type}" under "## Condition types"`);
  for (const [reason, on] of written.reasons) {
    const body = reasons.get(reason);
    if (body === undefined) {
      missing.push(`reason ${reason} (on ${[...on].join(', ')}): no "### ${reason}" under "## Reasons"`);
      continue;
    }
    for (const type of on) if (!body.includes(`\`${type}\``)) missing.push(`reason ${reason}: its section does not say it is written on \`${type}\``);
  }
  for (const reason of written.events.keys()) if (!events.has(reason)) missing.push(`Event reason ${reason}: no "### ${reason}" under "## Events"`);
  return missing;
}

describe('docs/conditions.md: every condition and reason the operator writes', function () {
  const written = writtenIn(sourcesUnder('src'));

  it('finds the conditions in the code (a refactor that hides them from this test fails it)', function () {
    // What the code writes today, at least: if the literals move behind a helper, this says so rather than passing on nothing.
    expect([...written.types.keys()]).to.include.members(['Ready', 'WebhooksRegistered', 'CertificateReady']);
    expect([...written.reasons.keys()]).to.include.members(['InvalidSpec', 'WaitingForEndpoint', 'Conflict', 'ParamsUnavailable', 'ExceedsLimits', 'AuthorForbidden']);
    expect([...written.events.keys()]).to.include.members(['ReconcileFailed', 'CertificateIssued']);
  });

  it("reads a ternary's reasons and names what a page leaves out", function () {
    const code = writtenIn([
      {
        file: 'x.ts',
        text: "return { type: 'Ready', status: 'False', reason: limited ? 'ExceedsLimits' : 'InvalidSpec', message };\n" + "void this.deps.events.record(suite, 'Normal', 'CertificateIssued', `issued`);",
      },
    ]);
    const page = '# C\n## Condition types\n### `Ready`\n## Reasons\n### `ExceedsLimits`\nOn `Ready`.\n### `InvalidSpec`\nOn `WebhooksRegistered`.\n## Events\n';
    expect(undocumented(code, page)).to.deep.equal(['reason InvalidSpec: its section does not say it is written on `Ready`', 'Event reason CertificateIssued: no "### CertificateIssued" under "## Events"']);
  });

  it(`${PAGE} documents each one, with the condition types it is written on`, function () {
    const page = fs.readFileSync(path.join(ROOT, PAGE), 'utf8');
    expect(undocumented(written, page), `document each in ${PAGE} (its cause and its fix)`).to.deep.equal([]);
  });
});
