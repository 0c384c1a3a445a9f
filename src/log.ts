/** Structured JSON logs (winston). One logger; modules take a child with their component name. */
import winston from 'winston';

export const logger = winston.createLogger({
  level: process.env.PORTCULLIS_LOG_LEVEL ?? 'info',
  format: winston.format.combine(winston.format.timestamp(), winston.format.json()),
  transports: [new winston.transports.Console({ stderrLevels: ['error', 'warn', 'info', 'debug'] })],
});

export type Logger = winston.Logger;

export const componentLogger = (component: string): Logger => logger.child({ component });
