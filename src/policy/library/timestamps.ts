/**
 * A timestamp's fields in a time zone (`t.getHours('Europe/Berlin')`, `t.getHours('+02:00')`) as
 * cel-go reads them (common/types/timestamp.go, timeZone): a name is an IANA zone; anything with
 * a colon is an offset of hours and minutes, signed or not (`02:00` is two hours east), where
 * cel-js hands both to Intl, which refuses an unsigned offset. `getDayOfYear` counts in UTC
 * arithmetic, where cel-js's builds local-time Dates (off by one across a DST change of the
 * process's own zone). Errors are worded as Go's.
 */
import type { Environment } from '@marcbachmann/cel-js';
import { replaceBuiltin } from '../celjs/overloads.ts';
import { celError } from '../celjs/values.ts';

/**
 * The nanoseconds below the millisecond of the timestamps that have them: cel-js's timestamps are
 * Dates (milliseconds), cel-go's hold nanoseconds. Kept beside the Date, not in it, so that every
 * other path reads the Date it always did; set by `timestamp('...')` of a finer string and by
 * arithmetic, read by arithmetic and `string()` (conversions.ts, arithmetic.ts, strings.ts).
 */
const subMillis = new WeakMap<Date, number>();

export function subMilliNanos(t: Date): number {
  return subMillis.get(t) ?? 0;
}

/** `t` with `nanos` (0 to 999999) below its millisecond. */
export function withSubMilliNanos(t: Date, nanos: number): Date {
  if (nanos) subMillis.set(t, nanos);
  return t;
}

/** The nanoseconds below the millisecond an RFC 3339 string gives (its fraction's 4th to 9th digits). */
export function subMilliNanosOf(text: string): number {
  const fraction = /T\d\d:\d\d:\d\d\.(\d+)/.exec(text)?.[1];
  return fraction && fraction.length > 3 ? Number(fraction.slice(3, 9).padEnd(6, '0')) : 0;
}

const zones = new Map<string, Intl.DateTimeFormat>();

function zoneFormat(name: string): Intl.DateTimeFormat {
  let format = zones.get(name);
  if (!format) {
    try {
      format = new Intl.DateTimeFormat('en-US', { timeZone: name, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' });
    } catch {
      throw celError(`unknown time zone ${name}`);
    }
    if (zones.size > 1000) zones.clear();
    zones.set(name, format);
  }
  return format;
}

/** Go's strconv.Atoi: an optional sign and decimal digits. */
function atoi(s: string): number {
  if (!/^[+-]?\d+$/.test(s)) throw celError(`strconv.Atoi: parsing ${JSON.stringify(s)}: invalid syntax`);
  return Number(s);
}

/** A Date whose UTC fields are `t`'s wall-clock fields in `tz`. */
export function wallClock(t: Date, tz: string): Date {
  const colon = tz.indexOf(':');
  if (colon >= 0) {
    const hours = atoi(tz.slice(0, colon));
    const minutes = atoi(tz.slice(colon + 1));
    if (minutes < 0 || minutes > 59) throw celError(`timezone offset minutes out of range [0, 59]: ${tz}`);
    const offset = tz.startsWith('-') ? hours * 60 - minutes : hours * 60 + minutes;
    return new Date(t.getTime() + offset * 60_000);
  }
  // Go's time.LoadLocation: "" and "UTC" are UTC
  if (tz === '' || tz === 'UTC') return t;
  const parts: Record<string, number> = {};
  for (const p of zoneFormat(tz).formatToParts(t)) if (p.type !== 'literal') parts[p.type] = Number(p.value);
  const wall = new Date(Date.UTC(2000, parts.month! - 1, parts.day!, parts.hour!, parts.minute!, parts.second!, t.getUTCMilliseconds()));
  wall.setUTCFullYear(parts.year!);
  return wall;
}

/** Days since January 1st of the Date's UTC year. */
function dayOfYear(d: Date): bigint {
  const start = new Date(0);
  start.setUTCFullYear(d.getUTCFullYear(), 0, 1); // not Date.UTC, which reads years below 100 as 19xx
  return BigInt(Math.floor((d.getTime() - start.getTime()) / 86_400_000));
}

const FIELDS: Record<string, (d: Date) => number | bigint> = {
  getDate: (d) => d.getUTCDate(),
  getDayOfMonth: (d) => d.getUTCDate() - 1,
  getDayOfWeek: (d) => d.getUTCDay(),
  getDayOfYear: dayOfYear,
  getFullYear: (d) => d.getUTCFullYear(),
  getHours: (d) => d.getUTCHours(),
  getMinutes: (d) => d.getUTCMinutes(),
  getMonth: (d) => d.getUTCMonth(),
  getSeconds: (d) => d.getUTCSeconds(),
  getMilliseconds: (d) => d.getUTCMilliseconds(),
};

export function replaceTimestampBuiltins(env: Environment): void {
  const T = 'google.protobuf.Timestamp';
  for (const [name, field] of Object.entries(FIELDS)) {
    replaceBuiltin(env, `timestamp(0).${name}("UTC")`, `${T}.${name}(string): int`, (t: Date, tz: string) => BigInt(field(wallClock(t, tz))));
    if (name === 'getDayOfYear') replaceBuiltin(env, `timestamp(0).${name}()`, `${T}.${name}(): int`, (t: Date) => dayOfYear(t));
  }
}
