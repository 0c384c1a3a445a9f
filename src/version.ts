/** The operator's version, read once from the package's own package.json (in the image, beside dist/). */
import fs from 'node:fs';
import { appFile } from './app-files.ts';

export const VERSION: string = (JSON.parse(fs.readFileSync(appFile('package.json'), 'utf8')) as { version: string }).version;
