/**
 * tools/markdown-links: how a forge reads our Markdown's links and headings, in one place. A
 * heading's anchor is its GitHub slug (docs/.vitepress/config.ts gives the site the same, so an
 * anchor written once works on both); a page's anchors are those slugs and its explicit
 * `<a id="...">`; its links are what a reader can click, outside code. test/unit/docs-links.test.ts
 * checks every link of docs/ and the README with it. No Node imports: the site's config loads it.
 */

/**
 * GitHub's heading slug (github-slugger): the heading's text as rendered (no markup), lower
 * case, every character that is not a letter, a digit, `_`, `-` or a space removed, each space a
 * `-`. A repeated slug gets `-1`, `-2`... (see anchorsOf).
 */
export function githubSlug(text: string): string {
  return text
    .toLowerCase()
    .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
    .replace(/ /g, '-');
}

/** A heading's text as a forge renders it: links as their text, no HTML tags, no code or emphasis marks. */
export function headingText(markdown: string): string {
  return (
    markdown
      .replace(/!?\[([^\]]*)\]\([^)]*\)/g, '$1')
      .split(/(`+[^`]*`+)/)
      // Odd parts are code spans, whose text is literal (`<webhook>` stays); tags and emphasis go elsewhere.
      .map((part, i) =>
        i % 2 === 1
          ? part.replace(/`/g, '')
          : part
              .replace(/<[^>]+>/g, '')
              .replace(/(\*\*|__)(.+?)\1/g, '$2')
              .replace(/\*(.+?)\*/g, '$1'),
      )
      .join('')
      .trim()
  );
}

/** The lines of a Markdown text outside fenced code blocks, with their 1-based numbers. */
export function proseLines(markdown: string): { line: number; text: string }[] {
  const out: { line: number; text: string }[] = [];
  let fence: string | undefined;
  markdown.split('\n').forEach((text, i) => {
    const marker = /^\s{0,3}(`{3,}|~{3,})/.exec(text)?.[1];
    if (fence) {
      if (marker && marker[0] === fence[0] && marker.length >= fence.length && text.trim() === marker) fence = undefined;
      return;
    }
    if (marker) {
      fence = marker;
      return;
    }
    out.push({ line: i + 1, text });
  });
  return out;
}

/** The headings of a page (ATX `#` headings outside code), each with its level, text and slug, repeats numbered as GitHub numbers them. */
export function headingsOf(markdown: string): { level: number; text: string; slug: string; line: number }[] {
  const seen = new Map<string, number>();
  const out: { level: number; text: string; slug: string; line: number }[] = [];
  for (const { line, text } of proseLines(markdown)) {
    const match = /^\s{0,3}(#{1,6})\s+(.*?)\s*#*\s*$/.exec(text);
    if (!match) continue;
    const plain = headingText(match[2]!);
    const base = githubSlug(plain);
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    out.push({ level: match[1]!.length, text: plain, slug: count === 0 ? base : `${base}-${count}`, line });
  }
  return out;
}

/** Every anchor a link may name in a page: its headings' slugs and its explicit `id`/`name` attributes. */
export function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set(headingsOf(markdown).map((h) => h.slug));
  for (const { text } of proseLines(markdown)) {
    for (const match of withoutCodeSpans(text).matchAll(/<a\s+(?:id|name)="([^"]+)"/g)) anchors.add(match[1]!);
  }
  return anchors;
}

/** A line with its inline code spans blanked out (a link written in code is not one). */
function withoutCodeSpans(text: string): string {
  return text.replace(/(`+)(?:(?!\1).)+?\1/g, (span) => ' '.repeat(span.length));
}

/** The links a reader can follow in a page: inline links and images, reference definitions and HTML href/src, outside code. */
export function linksOf(markdown: string): { line: number; target: string }[] {
  const out: { line: number; target: string }[] = [];
  for (const { line, text } of proseLines(markdown)) {
    const prose = withoutCodeSpans(text);
    // [text](target "title") and ![alt](target); the text may hold code spans, blanked above.
    for (const match of prose.matchAll(/\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)/g)) out.push({ line, target: match[1]! });
    const definition = /^\s{0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s+"[^"]*")?\s*$/.exec(prose);
    if (definition) out.push({ line, target: definition[1]! });
    for (const match of prose.matchAll(/\b(?:href|src)="([^"]+)"/g)) out.push({ line, target: match[1]! });
  }
  return out;
}
