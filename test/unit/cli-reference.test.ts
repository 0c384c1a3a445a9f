/**
 * tools/cli-reference.ts, the generator of docs/cli.md: every flag the operator's --help lists
 * is a row of the page with its environment variable, `portcullis --help` is on it word for
 * word, and a help line the generator cannot read fails the render instead of dropping a flag.
 * (That docs/cli.md is what it renders now is test/e2e/manifests-drift.test.ts'.)
 */
import { expect } from 'chai';
import { fileURLToPath } from 'node:url';
import { helpOf, parseOperatorHelp, renderCliReference } from '../../tools/cli-reference.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const OPTIONS = { file: 'docs/cli.md', regenerate: 'npm run manifests' };

describe('docs/cli.md generator (tools/cli-reference.ts)', function () {
  this.timeout(30_000);
  let cliHelp: string;
  let operatorHelp: string;
  before(async () => {
    [cliHelp, operatorHelp] = await Promise.all([helpOf(ROOT, 'src/cli/main.ts'), helpOf(ROOT, 'src/main.ts')]);
  });

  it('lists every operator flag of --help, with the PORTCULLIS_ variable it also reads', function () {
    const page = renderCliReference(cliHelp, operatorHelp, OPTIONS);
    const flags = [...operatorHelp.matchAll(/^\s+--([a-z0-9-]+)=/gm)].map((m) => m[1]!);
    expect(flags).to.include.members(['serving-port', 'native-enforcement', 'type-check-errors']);
    for (const flag of flags) {
      expect(page, `--${flag}`).to.include(`\`--${flag}\` | \`PORTCULLIS_${flag.toUpperCase().replaceAll('-', '_')}\` |`);
    }
  });

  it('holds portcullis --help word for word', function () {
    expect(renderCliReference(cliHelp, operatorHelp, OPTIONS)).to.include(cliHelp.trimEnd());
  });

  it('refuses a flag line it cannot read rather than leave the flag out', function () {
    const changed = operatorHelp.replace(/^(\s+)--serving-port=(\s+)/m, '$1--serving-port <PORT>$2');
    expect(changed).to.not.equal(operatorHelp);
    expect(() => parseOperatorHelp(changed)).to.throw(/cannot read this line of the operator's --help as a flag: .*serving-port/);
  });

  it('escapes what would end a table cell or open a tag', function () {
    const help = 'portcullis 0: x\n\nUsage: node src/main.ts [flags]\n\n  --mode=     a|b, as <MODE>\n  -h, --help  print this\n';
    expect(renderCliReference('usage', help, OPTIONS)).to.include('| a\\|b, as &lt;MODE> |');
  });
});
