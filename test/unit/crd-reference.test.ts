/**
 * tools/crd-reference: the API reference rendered from a CRD. A small CRD shows each part of a
 * schema where a reader looks for it; the real CRDs' pages name every field they declare (walked
 * here independently of the generator, so that a field it skips fails), and every link inside a
 * page, or from the index to a page, lands on an anchor that exists. That the committed pages are
 * these is the drift test's (test/e2e/manifests-drift.test.ts).
 */
import { expect } from 'chai';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import * as yaml from 'js-yaml';
import { anchor, renderCrdReference, renderReferenceIndex, type ReferenceOptions, type Schema } from '../../tools/crd-reference.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const REGENERATE = 'npm run manifests';

const SMALL = `
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: { name: widgets.example.dev }
spec:
  group: example.dev
  scope: Namespaced
  names: { kind: Widget, listKind: WidgetList, plural: widgets, singular: widget, shortNames: [wdg], categories: [things] }
  versions:
    - name: v1
      served: true
      storage: true
      subresources: { status: {} }
      additionalPrinterColumns:
        - { name: Size, type: integer, jsonPath: .spec.size, description: "How big | how many." }
        - { name: Mode, type: string, jsonPath: .spec.mode, priority: 1 }
      schema:
        openAPIV3Schema:
          type: object
          description: A Widget is a thing.
          properties:
            apiVersion: { type: string, description: "APIVersion." }
            kind: { type: string, description: "Kind." }
            metadata: { type: object }
            spec:
              type: object
              description: What the widget is.
              required: [size, parts]
              x-kubernetes-validations:
                - rule: "self.size > 0 || !has(self.parts)"
                  message: "parts need a size"
                  reason: FieldValueForbidden
                  fieldPath: .parts
              properties:
                size: { type: integer, format: int32, minimum: 1, maximum: 10, default: 3, description: "How many <name>s, * for all." }
                mode: { type: string, enum: [Fast, Slow], default: Fast, description: "The mode." }
                name: { type: string, minLength: 1, maxLength: 63, pattern: '^[a-z]+$', description: "A name." }
                port: { x-kubernetes-int-or-string: true, description: "A port, by number or name." }
                note: { type: string, nullable: true, description: "A note.\\n# not a heading" }
                extra: { type: object, x-kubernetes-preserve-unknown-fields: true, description: "Anything." }
                tags:
                  type: array
                  maxItems: 5
                  x-kubernetes-list-type: set
                  description: Tags.
                  items: { type: string, maxLength: 8, enum: [a, b] }
                labels:
                  type: object
                  description: Labels.
                  additionalProperties: { type: string, maxLength: 16 }
                parts:
                  type: array
                  minItems: 1
                  x-kubernetes-list-type: map
                  x-kubernetes-list-map-keys: [id]
                  description: The parts.
                  items:
                    type: object
                    required: [id]
                    x-kubernetes-validations:
                      - rule: |-
                          self.id != 'x' &&
                          self.id != 'y'
                        messageExpression: "'bad id ' + self.id"
                    properties:
                      id: { type: string, description: "The part's id." }
                      grid:
                        type: array
                        description: Rows of cells.
                        items:
                          type: array
                          items:
                            type: object
                            properties:
                              cell: { type: string, description: "A cell." }
                byName:
                  type: object
                  description: Parts by name.
                  additionalProperties:
                    type: object
                    properties:
                      weight: { type: integer, description: "Its weight." }
            status:
              type: object
              description: What was seen.
              properties:
                seen: { type: string, format: date-time, description: "When." }
`;

const options = (source: string, file: string): ReferenceOptions => ({ source, file, regenerate: REGENERATE });

/** Every field path a schema declares, walked as a reader writes them: spec.parts[].grid[][].cell, spec.byName{}.weight. */
function declaredPaths(schema: Schema, at: string): string[] {
  const found: string[] = [];
  for (const [name, property] of Object.entries(schema.properties ?? {})) {
    const field = at ? `${at}.${name}` : name;
    found.push(field, ...declaredPaths(property, field));
    let inner: Schema | undefined = property;
    let innerPath = field;
    // Through nested arrays and maps to the object that holds further fields.
    for (;;) {
      if (inner?.items) [inner, innerPath] = [inner.items, `${innerPath}[]`];
      else if (inner?.additionalProperties && typeof inner.additionalProperties === 'object') [inner, innerPath] = [inner.additionalProperties, `${innerPath}{}`];
      else break;
      found.push(...declaredPaths(inner, innerPath));
    }
  }
  return found;
}

/** The anchors a page defines, each once (a duplicate would make links land on the first). */
function anchorsOf(markdown: string): string[] {
  return [...markdown.matchAll(/<a id="([^"]+)"><\/a>/g)].map((m) => m[1]!);
}

/** The page without its code spans and blocks, whose CEL and patterns may look like links. */
function outsideCode(markdown: string): string {
  return markdown.replace(/```[\s\S]*?```/g, '').replace(/(`+)[\s\S]*?\1/g, '');
}

/** Every in-page link's target (#id). */
function linksOf(markdown: string): string[] {
  return [...outsideCode(markdown).matchAll(/\]\(#([^)]+)\)/g)].map((m) => m[1]!);
}

function expectLinksResolve(markdown: string, name: string) {
  const anchors = anchorsOf(markdown);
  expect(anchors.length, `${name} has anchors`).to.be.above(0);
  expect(
    anchors.filter((id, i) => anchors.indexOf(id) !== i),
    `${name}: anchors defined twice`,
  ).to.deep.equal([]);
  const defined = new Set(anchors);
  const dangling = [...new Set(linksOf(markdown))].filter((id) => !defined.has(id));
  expect(dangling, `${name}: links to anchors that do not exist`).to.deep.equal([]);
}

describe('tools/crd-reference', function () {
  const page = renderCrdReference(SMALL, options('crds/widgets.yaml', 'docs/reference/widget.md'));
  /** The entry of one field: from its bold path to the next entry or heading. */
  const entry = (field: string) => {
    const start = page.indexOf(`**\`${field}\`**`);
    expect(start, `${field} has an entry`).to.be.at.least(0);
    const rest = page.slice(start + 1);
    const end = rest.search(/\n(- (<a id="[^"]+"><\/a>)?\*\*`|#)/);
    return rest.slice(0, end < 0 ? undefined : end);
  };

  it('names the resource: kind, group, version, scope, names, subresources, printer columns', function () {
    expect(page).to.match(/^<!-- Generated from crds\/widgets\.yaml by `npm run manifests`/);
    expect(page).to.include('# Widget\n');
    expect(page).to.include('`example.dev/v1` · namespaced');
    expect(page).to.include('[`crds/widgets.yaml`](../../crds/widgets.yaml)');
    expect(page).to.include('- **Kind**: `Widget` (list: `WidgetList`)');
    expect(page).to.include('- **Versions**: `v1` (served, storage)');
    expect(page).to.include('- **Scope**: Namespaced');
    expect(page).to.include('- **Resource**: `widgets` (singular `widget`)');
    expect(page).to.include('- **Short names**: `wdg`');
    expect(page).to.include('- **Categories**: `things`');
    expect(page).to.include('- **Subresources**: status');
    // A | in a cell is escaped, or GFM would split the cell.
    expect(page).to.include('| Size | integer | `.spec.size` | 0 | How big \\| how many. |');
    expect(page).to.include('| Mode | string | `.spec.mode` | 1 |  |');
  });

  it('gives each field its path, type, required, default, description and validation', function () {
    expect(entry('spec.size')).to.include('(integer, format `int32`, **required**)').and.include('Default: `3`').and.include('- minimum 1').and.include('- maximum 10');
    // Plain text: <name> is not an HTML tag, * is not emphasis.
    expect(entry('spec.size')).to.include('How many &lt;name&gt;s, \\* for all.');
    expect(entry('spec.mode')).to.include('(string)').and.include('Default: `Fast`').and.include('- one of `Fast`, `Slow`');
    expect(entry('spec.name')).to.include('- pattern `^[a-z]+$`').and.include('- at least 1 character\n').and.include('- at most 63 characters');
    expect(entry('spec.port')).to.include('(integer or string)');
    expect(entry('spec.note')).to.include('- may be null').and.include('  \\# not a heading');
    expect(entry('spec.extra')).to.include('(object)').and.include('any fields, kept as given (x-kubernetes-preserve-unknown-fields)');
    expect(entry('spec.tags')).to.include('(array of string)').and.include('- at most 5 items').and.include('list type `set`').and.include('- each item: one of `a`, `b`').and.include('- each item: at most 8 characters');
    expect(entry('spec.labels')).to.include('(map of string to string)').and.include('- each value: at most 16 characters');
    expect(entry('spec.parts')).to.include('(array of [object](#spec-parts), **required**)').and.include('- at least 1 item').and.include('list type `map`: items keyed by `id`');
    expect(entry('spec.parts[].grid')).to.include('(array of array of [object](#spec-parts-grid))');
    expect(entry('spec.byName')).to.include('(map of string to [object](#spec-byname))');
    expect(entry('status.seen')).to.include('(string, format `date-time`)');
    expect(entry('metadata')).to.include('ObjectMeta');
    expect(entry('spec.mode')).not.to.include('required');
  });

  it("lists an object's own rules in its section, a multi-line rule as a block", function () {
    expect(page).to.include('- CEL rule `self.size > 0 || !has(self.parts)`; message: parts need a size; reason: `FieldValueForbidden`; field path: `.parts`');
    expect(page).to.include("- CEL rule; message expression: `'bad id ' + self.id`:\n\n  ```cel\n  self.id != 'x' &&\n  self.id != 'y'\n  ```");
    const parts = page.slice(page.indexOf('<a id="spec-parts"></a>'));
    expect(parts).to.match(/^<a id="spec-parts"><\/a>`spec\.parts\[\]`\n\nAn item of `spec\.parts`, a field of \[`spec`\]\(#spec\)\./);
  });

  it('has a section per object level, spec and status at the top, with contents that link to each', function () {
    for (const [heading, id] of [
      ['## <a id="spec"></a>`spec`', 'spec'],
      ['## <a id="status"></a>`status`', 'status'],
      ['### <a id="spec-parts"></a>`spec.parts[]`', 'spec-parts'],
      ['### <a id="spec-parts-grid"></a>`spec.parts[].grid[][]`', 'spec-parts-grid'],
      ['### <a id="spec-byname"></a>`spec.byName{}`', 'spec-byname'],
      ['## <a id="top-level"></a>Top level', 'top-level'],
    ]) {
      expect(page).to.include(`\n${heading}\n`);
      expect(page.slice(page.indexOf('Contents'))).to.include(`](#${id})`);
    }
    expectLinksResolve(page, 'the small page');
  });

  it('is stable: the same input gives the same bytes', function () {
    expect(renderCrdReference(SMALL, options('crds/widgets.yaml', 'docs/reference/widget.md'))).to.equal(page);
  });

  it('keeps several versions apart, anchors prefixed with the version', function () {
    const crd = yaml.load(SMALL) as { spec: { versions: { name: string; storage: boolean }[] } };
    crd.spec.versions.push({ ...crd.spec.versions[0]!, name: 'v2', storage: false });
    const two = renderCrdReference(yaml.dump(crd), options('crds/widgets.yaml', 'docs/reference/widget.md'));
    expect(two).to.include('## <a id="v1"></a>Version `v1`').and.include('## <a id="v2"></a>Version `v2`');
    expect(two).to.include('<a id="v2-spec-size"></a>**`spec.size`**');
    expectLinksResolve(two, 'the two-version page');
  });

  it('refuses two places that would share an anchor', function () {
    const crd = yaml.load(SMALL) as { spec: { versions: { schema: { openAPIV3Schema: Schema } }[] } };
    crd.spec.versions[0]!.schema.openAPIV3Schema.properties!.spec!.properties!['ByName'] = { type: 'string', description: 'Clash.' };
    expect(() => renderCrdReference(yaml.dump(crd), options('crds/widgets.yaml', 'docs/reference/widget.md'))).to.throw(/anchor #spec-byname/);
    expect(anchor('spec.webhooks[].rules[]')).to.equal('spec-webhooks-rules');
  });

  describe('the real CRDs', function () {
    const pages = [
      { source: 'crds/admission.portcullis.dev_admissionsuites.yaml', file: 'docs/reference/admissionsuite.md' },
      { source: 'crds/admission.portcullis.dev_admissionpolicies.yaml', file: 'docs/reference/admissionpolicy.md' },
    ].map(({ source, file }) => {
      const yamlText = fs.readFileSync(path.join(ROOT, source), 'utf8');
      return { yamlText, options: options(source, file), markdown: renderCrdReference(yamlText, options(source, file)) };
    });

    it('name every field they declare, with its path', function () {
      for (const {
        yamlText,
        options: { source },
        markdown,
      } of pages) {
        const crd = yaml.load(yamlText) as { spec: { versions: { schema: { openAPIV3Schema: Schema } }[] } };
        const paths = declaredPaths(crd.spec.versions[0]!.schema.openAPIV3Schema, '');
        // Guards the walk: it reaches fields nested in lists.
        expect(
          paths.filter((p) => p.endsWith('rules[].operations')),
          source,
        ).to.have.length.above(0);
        const missing = paths.filter((p) => !markdown.includes(`**\`${p}\`**`));
        expect(missing, `${source}: fields its reference leaves out`).to.deep.equal([]);
      }
      expect(pages[0]!.markdown).to.include('**`spec.webhooks[].rules[].operations`**').and.include('**`spec.webhooks[].mutations[].patch[].op`**');
    });

    it('link only to anchors that exist', function () {
      for (const {
        options: { file },
        markdown,
      } of pages)
        expectLinksResolve(markdown, file);
    });

    it('are listed by the index, whose links reach the pages and the files they name', function () {
      const index = renderReferenceIndex(pages, { file: 'docs/reference/README.md', regenerate: REGENERATE, upstream: ['crds/openreports.io_reports.yaml'] });
      expect(index).to.include('[`AdmissionSuite`](admissionsuite.md)').and.include('[`AdmissionPolicy`](admissionpolicy.md)');
      expect(index).to.include('| Cluster |').and.include('| Namespaced |').and.include('`asuite`').and.include('`apol`');
      // Relative links to files of the repository (the CRDs on each page, the upstream CRDs on the index).
      for (const [file, markdown] of [['docs/reference/README.md', index], ...pages.map((p) => [p.options.file, p.markdown] as const)] as const) {
        for (const [, target] of outsideCode(markdown).matchAll(/\]\(((?!#|https?:)[^)#]+)\)/g)) {
          const resolved = path.posix.join(path.posix.dirname(file), target!);
          const exists = pages.some((p) => p.options.file === resolved) || fs.existsSync(path.join(ROOT, resolved));
          expect(exists, `${file} links to ${target}, which is not there`).to.equal(true);
        }
      }
    });
  });
});
