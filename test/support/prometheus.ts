/**
 * A strict parser of the Prometheus text exposition format (version 0.0.4), for tests that scrape
 * /metrics: it throws, naming the line, on anything a Prometheus server would refuse or that the
 * format forbids (bad names or escapes, a TYPE after its samples, a family split in two, a
 * duplicate series, a histogram whose buckets are not cumulative or do not end in +Inf = _count).
 */
import https from 'node:https';
import type { KubeConfig } from '@kubernetes/client-node';

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Family {
  name: string;
  type: 'counter' | 'gauge' | 'histogram' | 'summary' | 'untyped';
  help?: string;
  samples: Sample[];
}

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

export function parseExposition(text: string): Map<string, Family> {
  if (text !== '' && !text.endsWith('\n')) throw new Error('the exposition does not end with a newline');
  const families = new Map<string, Family>();
  const closed = new Set<string>();
  const seen = new Set<string>();
  let current: Family | undefined;
  const family = (name: string, at: string): Family => {
    let found = families.get(name);
    if (!found) families.set(name, (found = { name, type: 'untyped', samples: [] }));
    if (current !== found) {
      if (closed.has(name)) throw new Error(`${at}: family ${name} appears in two groups`);
      if (current) closed.add(current.name);
      current = found;
    }
    return found;
  };
  text
    .split('\n')
    .slice(0, -1)
    .forEach((line, index) => {
      const at = `line ${index + 1} (${JSON.stringify(line)})`;
      if (line.startsWith('#')) {
        const match = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
        if (!match) return; // a plain comment
        const [, keyword, name, rest] = match as unknown as [string, string, string, string];
        if (!METRIC_NAME.test(name)) throw new Error(`${at}: bad metric name`);
        const target = family(name, at);
        if (keyword === 'HELP') {
          if (target.help !== undefined) throw new Error(`${at}: second HELP`);
          if (/\\[^\\n]/.test(rest.replaceAll('\\\\', ''))) throw new Error(`${at}: bad escape in HELP`);
          target.help = rest.replaceAll('\\n', '\n').replaceAll('\\\\', '\\');
        } else {
          if (!TYPES.has(rest)) throw new Error(`${at}: unknown type ${rest}`);
          if (target.samples.length) throw new Error(`${at}: TYPE after samples`);
          target.type = rest as Family['type'];
        }
        return;
      }
      if (line.trim() === '') return; // (allowed, and ignored)
      const sample = parseSample(line, at);
      const key = `${sample.name}${JSON.stringify(Object.entries(sample.labels).sort())}`;
      if (seen.has(key)) throw new Error(`${at}: duplicate series`);
      seen.add(key);
      family(familyName(sample.name, families), at).samples.push(sample);
    });
  for (const f of families.values()) if (f.type === 'histogram') checkHistogram(f);
  return families;
}

/** The family a sample belongs to: a histogram's or summary's `_bucket`, `_sum`, `_count` go to their base name. */
function familyName(name: string, families: Map<string, Family>): string {
  for (const suffix of ['_bucket', '_sum', '_count']) {
    if (!name.endsWith(suffix)) continue;
    const base = families.get(name.slice(0, -suffix.length));
    if (base && (base.type === 'histogram' || (base.type === 'summary' && suffix !== '_bucket'))) return base.name;
  }
  return name;
}

function parseSample(line: string, at: string): Sample {
  const nameMatch = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line);
  if (!nameMatch) throw new Error(`${at}: bad metric name`);
  const name = nameMatch[0];
  let i = name.length;
  const labels: Record<string, string> = {};
  if (line[i] === '{') {
    i++;
    while (line[i] !== '}') {
      const labelMatch = /^([^=]+)="/.exec(line.slice(i));
      if (!labelMatch || !LABEL_NAME.test(labelMatch[1]!)) throw new Error(`${at}: bad label at ${i}`);
      const label = labelMatch[1]!;
      if (label in labels) throw new Error(`${at}: label ${label} twice`);
      i += labelMatch[0].length;
      let value = '';
      for (;;) {
        const c = line[i++];
        if (c === undefined) throw new Error(`${at}: unterminated label value`);
        if (c === '"') break;
        if (c === '\\') {
          const e = line[i++];
          if (e === 'n') value += '\n';
          else if (e === '\\' || e === '"') value += e;
          else throw new Error(`${at}: bad escape \\${e}`);
        } else value += c;
      }
      labels[label] = value;
      if (line[i] === ',') i++;
      else if (line[i] !== '}') throw new Error(`${at}: expected , or } at ${i}`);
    }
    i++;
  }
  const rest = line.slice(i);
  const valueMatch = /^ (\S+)(?: (-?\d+))?$/.exec(rest);
  if (!valueMatch) throw new Error(`${at}: bad value part ${JSON.stringify(rest)}`);
  const text = valueMatch[1]!;
  // As Prometheus reads a value (Go's strconv.ParseFloat): NaN and Inf in any case (prom-client writes "Nan").
  const special = /^([+-]?)(inf|infinity|nan)$/i.exec(text);
  const value = special ? (special[2]!.toLowerCase() === 'nan' ? NaN : special[1] === '-' ? -Infinity : Infinity) : Number(text);
  if (Number.isNaN(value) && !special) throw new Error(`${at}: bad value ${text}`);
  return { name, labels, value };
}

function checkHistogram(f: Family): void {
  const series = new Map<string, { buckets: [number, number][]; count?: number; sum?: number }>();
  for (const s of f.samples) {
    const { le, ...rest } = s.labels;
    const key = JSON.stringify(Object.entries(rest).sort());
    const entry = series.get(key) ?? { buckets: [] };
    series.set(key, entry);
    if (s.name === `${f.name}_bucket`) {
      if (le === undefined) throw new Error(`${f.name}: a bucket without le`);
      entry.buckets.push([le === '+Inf' ? Infinity : Number(le), s.value]);
    } else if (s.name === `${f.name}_count`) entry.count = s.value;
    else if (s.name === `${f.name}_sum`) entry.sum = s.value;
    else throw new Error(`${f.name}: unexpected sample ${s.name}`);
  }
  for (const [key, { buckets, count, sum }] of series) {
    if (count === undefined || sum === undefined) throw new Error(`${f.name}${key}: no _count or _sum`);
    for (let b = 1; b < buckets.length; b++) {
      if (!(buckets[b]![0] > buckets[b - 1]![0])) throw new Error(`${f.name}${key}: le not increasing`);
      if (buckets[b]![1] < buckets[b - 1]![1]) throw new Error(`${f.name}${key}: buckets not cumulative`);
    }
    const last = buckets.at(-1);
    if (!last || last[0] !== Infinity || last[1] !== count) throw new Error(`${f.name}${key}: the +Inf bucket is not _count`);
  }
}

/** The value of the one sample of `name` whose labels include `labels`; undefined when none; throws when several. */
export function sampleValue(families: Map<string, Family>, name: string, labels: Record<string, string> = {}): number | undefined {
  const matches = [...families.values()].flatMap((f) => f.samples).filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (matches.length > 1) throw new Error(`${matches.length} samples of ${name} match ${JSON.stringify(labels)}`);
  return matches[0]?.value;
}

/** Scrapes and parses the /metrics of the operator whose metrics port is `port`. */
export async function scrape(port: number): Promise<Map<string, Family>> {
  const response = await fetch(`http://127.0.0.1:${port}/metrics`);
  if (response.status !== 200) throw new Error(`/metrics answered ${response.status}`);
  return parseExposition(await response.text());
}

/** Scrapes and parses the API server's own /metrics (its admission webhook counters), with the kubeconfig's credentials. */
export async function scrapeApiServer(kubeConfig: KubeConfig): Promise<Map<string, Family>> {
  const server = new URL(kubeConfig.getCurrentCluster()!.server);
  const options: https.RequestOptions = { host: server.hostname, port: server.port, path: '/metrics', method: 'GET' };
  await kubeConfig.applyToHTTPSOptions(options);
  const text = await new Promise<string>((resolve, reject) => {
    const request = https.request(options, (response) => {
      let body = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => (body += chunk));
      response.on('end', () => (response.statusCode === 200 ? resolve(body) : reject(new Error(`the API server's /metrics answered ${response.statusCode}`))));
    });
    request.on('error', reject);
    request.end();
  });
  return parseExposition(text);
}
