/** The operator's version, read once from the package's own package.json (shipped in the image beside src/). */
import fs from 'node:fs';

export const VERSION: string = (JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
