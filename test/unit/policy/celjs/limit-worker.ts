/**
 * Worker side of limits.test.ts: compiles and evaluates every expression at the API server's
 * limits on this thread's stack (the test starts it with 1 MiB) and posts each answer back.
 */
import { parentPort } from 'node:worker_threads';
import { atLimitAnswers } from './limit-cases.ts';

parentPort!.postMessage(atLimitAnswers());
