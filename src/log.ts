/**
 * Structured logs (winston): one logger; modules take a child with their component name. JSON
 * lines by default (for collectors), or one readable line each (`--log-format=text`). Until the
 * flags are read, the level is PORTCULLIS_LOG_LEVEL's. Writes to stderr only.
 */
import winston from 'winston';

export const LOG_LEVELS = ['error', 'warn', 'info', 'debug'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

const FORMATS = {
  json: winston.format.combine(winston.format.timestamp(), winston.format.json()),
  // 2026-11-23T20:00:40.033Z info admission: denied uid=900a… suite=guard webhook=no-deny decision=denied
  text: winston.format.combine(
    winston.format.timestamp(),
    winston.format.printf(({ timestamp, level, message, component, ...fields }) => {
      const rest = Object.entries(fields).map(([key, value]) => `${key}=${textValue(value)}`);
      return [timestamp, level, `${component ? `${String(component)}: ` : ''}${String(message)}`, ...rest].join(' ');
    }),
  ),
};

/** A bare word as it is; anything with a space, a quote or structure as JSON. */
function textValue(value: unknown): string {
  if (typeof value === 'string' && /^[^\s"=]+$/.test(value)) return value;
  return JSON.stringify(value) ?? String(value);
}

export const logger = winston.createLogger({
  level: process.env.PORTCULLIS_LOG_LEVEL ?? 'info',
  format: FORMATS.json,
  transports: [new winston.transports.Console({ stderrLevels: ['error', 'warn', 'info', 'debug'] })],
});

/** Sets the level and format of every logger, children included (the operator's flags). */
export function configureLogging(options: { level: LogLevel; format: keyof typeof FORMATS }): void {
  logger.level = options.level;
  logger.format = FORMATS[options.format];
}

export type Logger = winston.Logger;

/**
 * What a component that only writes lines needs of a logger (a winston Logger is one): the
 * admission path takes this, so that its thread can log through the main thread's loggers.
 * Why: docs/adr/0012-threads-log-through-the-main-thread.md
 */
export interface LogWriter {
  error(message: string, fields?: object): unknown;
  warn(message: string, fields?: object): unknown;
  info(message: string, fields?: object): unknown;
  debug(message: string, fields?: object): unknown;
}

export const componentLogger = (component: string): Logger => logger.child({ component });
