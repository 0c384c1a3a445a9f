/**
 * JUnit XML, the report format CI systems read test results from (Jenkins, GitLab, GitHub
 * actions' reporters): `<testsuites>` of `<testsuite>`s of `<testcase>`s, a failure as a
 * `<failure message type>` child. Written here for `portcullis scan` and `portcullis test`; knows
 * nothing of either. Pure.
 */

export interface JunitCase {
  name: string;
  classname: string;
  file?: string;
  line?: number;
  failure?: { message: string; type: string; text: string };
  /** What the case printed: warnings, audit annotations. */
  output?: string;
}

export interface JunitSuite {
  name: string;
  file?: string;
  cases: JunitCase[];
}

/** The document: the counts on each element as CI tools sum them (no errors: what cannot run fails the whole command instead). */
export function junitXml(name: string, suites: JunitSuite[]): string {
  const failures = (cases: JunitCase[]) => cases.filter((c) => c.failure).length;
  const all = suites.flatMap((s) => s.cases);
  const lines = [`<?xml version="1.0" encoding="UTF-8"?>`, `<testsuites ${attributes({ name, tests: all.length, failures: failures(all), errors: 0 })}>`];
  for (const suite of suites) {
    const head = attributes({ name: suite.name, tests: suite.cases.length, failures: failures(suite.cases), errors: 0, skipped: 0, ...(suite.file ? { file: suite.file } : {}) });
    if (suite.cases.length === 0) {
      lines.push(`  <testsuite ${head}/>`);
      continue;
    }
    lines.push(`  <testsuite ${head}>`);
    for (const c of suite.cases) {
      const attrs = attributes({ name: c.name, classname: c.classname, ...(c.file ? { file: c.file } : {}), ...(c.line ? { line: c.line } : {}) });
      if (!c.failure && !c.output) {
        lines.push(`    <testcase ${attrs}/>`);
        continue;
      }
      lines.push(`    <testcase ${attrs}>`);
      if (c.failure) lines.push(`      <failure ${attributes({ message: c.failure.message, type: c.failure.type })}>${text(c.failure.text)}</failure>`);
      if (c.output) lines.push(`      <system-out>${text(c.output)}</system-out>`);
      lines.push('    </testcase>');
    }
    lines.push('  </testsuite>');
  }
  lines.push('</testsuites>');
  return `${lines.join('\n')}\n`;
}

function attributes(values: Record<string, string | number>): string {
  return Object.entries(values)
    .map(([key, value]) => `${key}="${text(String(value)).replaceAll('"', '&quot;').replaceAll('\n', '&#10;')}"`)
    .join(' ');
}

/** Character data: markup escaped, and the characters XML 1.0 cannot hold at all (control characters) replaced, so that no message makes the file unreadable. */
function text(value: string): string {
  return value
    .replace(/[^\t\n\r\u0020-\uD7FF\uE000-\uFFFD\u{10000}-\u{10FFFF}]/gu, '\uFFFD')
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;');
}
