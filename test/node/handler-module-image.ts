/**
 * test/node/handler-module-image.ts: the operator's image with a handler module in it, built as a
 * team builds it: the example copied out of the repository, its own `npm install` (`portcullis`
 * from the packed tarball: test/support/package.ts) and `npm run build`, then `buildah bud` of its
 * documented Dockerfile (examples/unique-ingress-host/Dockerfile) `FROM` the operator's image
 * (operator-image.ts's, loaded from its archive). Written as an OCI archive for the node to import.
 * Built afresh each run (a few seconds: one COPY layer over the operator's image).
 * Must not touch: the example's sources, buildah's default storage.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { buildah, cacheRoot, type ImageArchive } from './images.ts';
import type { OperatorImage } from './operator-image.ts';
import { installExample, npm } from '../support/package.ts';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
export const EXAMPLE = path.join(REPO, 'examples', 'unique-ingress-host');
export const HANDLER_IMAGE = 'ghcr.io/portcullis-dev/operator-with-handlers:0.1.0';

export async function buildHandlerModuleImage(base: OperatorImage, log: (line: string) => void): Promise<ImageArchive> {
  const example = await installExample(EXAMPLE);
  await npm(example, 'run', 'build');
  // The build context holds what the Dockerfile copies, nothing of the example's node_modules.
  const context = fs.mkdtempSync(path.join(os.tmpdir(), 'portcullis-handler-image-'));
  const archive = path.join(cacheRoot(), 'operator-image', 'operator-with-handlers.tar');
  try {
    fs.mkdirSync(path.join(context, 'dist'));
    for (const file of ['Dockerfile', 'package.json', 'dist/index.js']) fs.copyFileSync(path.join(example, file), path.join(context, file));
    await buildah(['pull', '--quiet', `oci-archive:${base.archive}:${base.name}`]);
    await buildah(['bud', '--isolation', 'chroot', '--pull-never', '--layers=false', '--build-arg', `PORTCULLIS_IMAGE=${base.name}`, '-t', HANDLER_IMAGE, context], { cwd: context });
    fs.rmSync(archive, { force: true });
    await buildah(['push', '--quiet', HANDLER_IMAGE, `oci-archive:${archive}:${HANDLER_IMAGE}`]);
    log(`handler module image: ${HANDLER_IMAGE} built FROM ${base.name}`);
  } finally {
    await buildah(['rmi', HANDLER_IMAGE]).catch(() => undefined);
    await buildah(['rmi', base.name]).catch(() => undefined);
    fs.rmSync(context, { recursive: true, force: true });
  }
  return { name: HANDLER_IMAGE, archive };
}
