/**
 * The operator's Node flags (src/admission/v8-tuning.ts) are given at start, in three places that must
 * agree: the image's entry point, `npm start`, and the benches (which import them).
 */
import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import { OPERATOR_NODE_FLAGS } from '../../src/admission/v8-tuning.ts';

const read = (file: string) => fs.readFileSync(new URL(`../../${file}`, import.meta.url), 'utf8');

describe('the operator is started with its V8 flags', function () {
  it('in the image: the Dockerfile entry point', function () {
    const entry = /^ENTRYPOINT (\[.*\])$/m.exec(read('Dockerfile'));
    expect(entry, 'the Dockerfile has an exec-form ENTRYPOINT').to.not.equal(null);
    expect(JSON.parse(entry![1]!)).to.deep.equal(['/usr/local/bin/node', ...OPERATOR_NODE_FLAGS, 'dist/main.js']);
  });

  it('by `npm start`', function () {
    const start: string = JSON.parse(read('package.json')).scripts.start;
    expect(start).to.equal(['node', ...OPERATOR_NODE_FLAGS, 'src/main.ts'].join(' '));
  });

  it('with flags this Node accepts', function () {
    const run = spawnSync(process.execPath, [...OPERATOR_NODE_FLAGS, '-e', '0'], { encoding: 'utf8' });
    expect(run.stderr).to.equal('');
    expect(run.status).to.equal(0);
  });
});
