/** The operator's version, read once from the package's own package.json (in the image, beside dist/, the stripped src/). */
import fs from 'node:fs';

export const VERSION: string = (JSON.parse(fs.readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string }).version;
