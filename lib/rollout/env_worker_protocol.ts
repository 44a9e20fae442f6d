/**
 * What the env worker (`env_worker.ts`) and its host (`env_worker_host.ts`) agree on beyond
 * the message types; a module of its own, since importing a value from the worker's module
 * would run the worker's code in the host.
 *
 * @module
 */

/** The reply id that reports a crash: an error in the worker that no request caught. */
export const CRASH_REPLY_ID = -1;
