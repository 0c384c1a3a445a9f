/**
 * The upstream Pod Security test data (k8s.io/pod-security-admission's test/testdata/<level>/
 * <version>/{pass,fail}/*.yaml): the module located through `go mod download -json` at the version
 * test/controlplane/go.sum pins (the module proxy fetches it on a clean machine), the fixtures read
 * as objects. Reads files only; what is done with them is each test's.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import * as yaml from 'js-yaml';

const CONTROLPLANE = join(dirname(fileURLToPath(import.meta.url)), '..', 'controlplane');
const MODULE = 'k8s.io/pod-security-admission';

export interface PodSecurityFixture {
  level: 'baseline' | 'restricted';
  version: string;
  expect: 'pass' | 'fail';
  file: string;
  pod: Record<string, any>;
}

/** The module's directory, downloaded if need be; a clear error when it cannot be. */
export function podSecurityModuleDir(): string {
  const sum = readFileSync(join(CONTROLPLANE, 'go.sum'), 'utf8');
  const version = new RegExp(`^${MODULE.replaceAll('.', '\\.')} (v[^ /]+) `, 'm').exec(sum)?.[1];
  if (!version) throw new Error(`test/controlplane/go.sum pins no ${MODULE}: the PodSecurity fixtures cannot be located`);
  let out: string;
  try {
    out = execFileSync('go', ['mod', 'download', '-json', `${MODULE}@${version}`], { cwd: CONTROLPLANE, encoding: 'utf8', timeout: 300_000 });
  } catch (err) {
    throw new Error(`go mod download ${MODULE}@${version} failed (Go and the module proxy are needed for the PodSecurity fixtures): ${(err as Error).message}`);
  }
  const dir = (JSON.parse(out) as { Dir?: string }).Dir;
  if (!dir) throw new Error(`go mod download ${MODULE}@${version} gave no Dir: ${out}`);
  return dir;
}

/** Every fixture, sorted by level, version (numerically), expectation and file. */
export function podSecurityFixtures(): PodSecurityFixture[] {
  const root = join(podSecurityModuleDir(), 'test', 'testdata');
  const fixtures: PodSecurityFixture[] = [];
  for (const level of ['baseline', 'restricted'] as const) {
    const versions = readdirSync(join(root, level)).sort((a, b) => Number(a.split('.')[1]) - Number(b.split('.')[1]));
    for (const version of versions) {
      for (const expect of ['pass', 'fail'] as const) {
        let files: string[];
        try {
          files = readdirSync(join(root, level, version, expect))
            .filter((f) => f.endsWith('.yaml'))
            .sort();
        } catch {
          continue; // some versions have no failing fixtures of their own
        }
        for (const file of files) fixtures.push({ level, version, expect, file, pod: yaml.load(readFileSync(join(root, level, version, expect, file), 'utf8')) as Record<string, any> });
      }
    }
  }
  if (fixtures.length === 0) throw new Error(`no PodSecurity fixtures under ${root}`);
  return fixtures;
}
