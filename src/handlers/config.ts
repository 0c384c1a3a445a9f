/**
 * Reading a built-in handler's config with field-named errors: unknown fields, types and ranges
 * checked field by field, every problem recorded under the field's name. Pure; knows nothing of
 * any handler's fields (each handler names its own).
 */

export interface ConfigError {
  field: string;
  message: string;
}

/**
 * Reads a handler's config field by field: each accessor checks the type, returns the value or
 * its default, and records a problem under the field's name (relative to `config`).
 */
export class ConfigReader {
  readonly errors: ConfigError[] = [];
  private readonly config: Record<string, unknown>;

  constructor(config: Record<string, unknown>, handler: string, known: string[]) {
    this.config = config;
    for (const key of Object.keys(config)) {
      if (!known.includes(key)) {
        this.error(key, known.length ? `unknown field; ${handler} takes ${known.join(', ')}` : `${handler} takes no configuration`);
      }
    }
  }

  error(field: string, message: string): void {
    this.errors.push({ field, message });
  }

  has(field: string): boolean {
    return this.config[field] !== undefined && this.config[field] !== null;
  }

  raw(field: string): unknown {
    return this.config[field];
  }

  string(field: string, fallback: string): string {
    const value = this.config[field];
    if (value === undefined || value === null) return fallback;
    if (typeof value !== 'string') {
      this.error(field, 'must be a string');
      return fallback;
    }
    return value;
  }

  integer(field: string, fallback: number, min = 0): number {
    const value = this.config[field];
    if (value === undefined || value === null) return fallback;
    if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < min) {
      this.error(field, `must be an integer no less than ${min}`);
      return fallback;
    }
    return value;
  }

  stringList(field: string, fallback: string[]): string[] {
    const value = this.config[field];
    if (value === undefined || value === null) return fallback;
    if (!Array.isArray(value)) {
      this.error(field, 'must be a list of strings');
      return fallback;
    }
    value.forEach((item, i) => {
      if (typeof item !== 'string' || item === '') this.error(`${field}[${i}]`, 'must be a non-empty string');
    });
    return value.filter((item): item is string => typeof item === 'string' && item !== '');
  }

  stringMap(field: string): Record<string, string> {
    const value = this.config[field];
    if (value === undefined || value === null) return {};
    if (!isPlainObject(value)) {
      this.error(field, 'must be a map of strings');
      return {};
    }
    const out: Record<string, string> = {};
    for (const [key, item] of Object.entries(value)) {
      if (typeof item !== 'string') this.error(`${field}.${key}`, 'must be a string');
      else out[key] = item;
    }
    return out;
  }
}

export function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
