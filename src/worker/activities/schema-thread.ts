/**
 * Judges a value against a run's own JSON schema (typed `output`) off the worker's event loop, in bounded time.
 *
 * AJV compiles a schema to code and runs it where it is called; a hostile schema (or an answer shaped against
 * it: `uniqueItems` over a large array is quadratic) held a worker's event loop for minutes, and every run on
 * that worker with it. Here the judging happens in one worker thread, each schema compiled by an AJV instance of
 * its own (no `$id` or `$ref` reaches another run's schema; a schema dropped from the cache is freed with its
 * instance), patterns matched by RE2 (linear time; shared/run-schema-checks.ts refuses what RE2 cannot run), and a check that
 * outlives CHECK_DEADLINE_MS ends the thread: the caller gets `stopped`, the next check starts a fresh thread.
 * docs/security.md "Schemas a run brings".
 */
import { Worker } from "node:worker_threads";
import { createRequire } from "node:module";

/** How long one check may take before its thread is ended. Honest checks take milliseconds. */
export const CHECK_DEADLINE_MS = 5000;
/** Compiled schemas the thread keeps (each with its own AJV instance); the least recently used is dropped. */
export const MAX_CACHED_SCHEMAS = 32;

/** What a check found: the (coerced) value, or AJV's errors as `path: message` lines, or why it could not judge. */
export type SchemaVerdict =
  | { ok: true; value: unknown }
  | { ok: false; errors: string[] }
  | { ok: false; unusable: string }
  /** The check was stopped (past its deadline, or its thread ran out of memory): no verdict on the value. */
  | { ok: false; stopped: string };

const require = createRequire(import.meta.url);

/**
 * The thread's program: plain CommonJS, so it runs the same under tsx, jest and the built package. It gets the
 * resolved paths of ajv, ajv-formats and re2js from the worker (no resolution of its own).
 */
const THREAD_SOURCE = String.raw`
const { parentPort, workerData } = require("node:worker_threads");
const Ajv = require(workerData.ajv).default;
const addFormats = require(workerData.formats).default;
const { RE2JS } = require(workerData.re2js);
const regExp = (pattern) => {
  const re = RE2JS.compile(pattern);
  return { test: (text) => re.matcher(text).find() };
};
const cache = new Map();
function compiled(key, schema) {
  let validate = cache.get(key);
  if (validate) {
    cache.delete(key);
  } else {
    const ajv = new Ajv({ allErrors: true, strict: false, coerceTypes: true, code: { regExp } });
    addFormats(ajv);
    validate = ajv.compile(schema);
    if (cache.size >= workerData.maxCached) cache.delete(cache.keys().next().value);
  }
  cache.set(key, validate);
  return validate;
}
parentPort.on("message", ({ id, schema, value, stats }) => {
  if (stats) return parentPort.postMessage({ id, cached: cache.size });
  let validate;
  try {
    validate = compiled(JSON.stringify(schema), schema);
  } catch (err) {
    return parentPort.postMessage({ id, verdict: { ok: false, unusable: String(err && err.message) } });
  }
  let valid;
  try {
    valid = validate(value);
  } catch (err) {
    return parentPort.postMessage({ id, verdict: { ok: false, unusable: String(err && err.message) } });
  }
  if (valid) return parentPort.postMessage({ id, verdict: { ok: true, value } });
  const errors = (validate.errors || []).map((e) => {
    const path = e.instancePath ? e.instancePath.substring(1) : (e.params && e.params.missingProperty) || "root";
    return path + ": " + e.message;
  });
  parentPort.postMessage({ id, verdict: { ok: false, errors } });
});
`;

interface Pending {
  id: number;
  message: { schema?: unknown; value?: unknown; stats?: true };
  resolve(reply: Record<string, unknown>): void;
}

let thread: Worker | undefined;
let nextId = 1;
/** Checks wait their turn: the deadline of each is its own, and the thread ended for one is not another's fault. */
const queue: Pending[] = [];
let current: { pending: Pending; timer: NodeJS.Timeout } | undefined;

function startThread(): Worker {
  const worker = new Worker(THREAD_SOURCE, {
    eval: true,
    // A hostile answer cannot take the worker's memory either: past this the thread ends, the check is stopped.
    resourceLimits: { maxOldGenerationSizeMb: 256 },
    workerData: {
      ajv: require.resolve("ajv"),
      formats: require.resolve("ajv-formats"),
      re2js: require.resolve("re2js"),
      maxCached: MAX_CACHED_SCHEMAS,
    },
  });
  worker.on("message", (reply: { id: number } & Record<string, unknown>) => {
    if (!current || current.pending.id !== reply.id) return;
    clearTimeout(current.timer);
    const { pending } = current;
    current = undefined;
    pending.resolve(reply);
    pump();
  });
  worker.on("error", (err) => endThread(worker, { verdict: { ok: false, unusable: err.message } }));
  worker.on("exit", () =>
    endThread(worker, { verdict: { ok: false, stopped: "the check's thread ended (past its memory limit)" } }),
  );
  // After the listeners (adding one refs the thread again): an idle thread never keeps the worker process alive.
  worker.unref();
  return worker;
}

/** The thread is gone (ended at a deadline, or failed): the check it held gets `reply`, the others a new thread. */
function endThread(worker: Worker, reply: Record<string, unknown>): void {
  if (thread !== worker) return;
  thread = undefined;
  if (current) {
    clearTimeout(current.timer);
    const { pending } = current;
    current = undefined;
    pending.resolve(reply);
  }
  pump();
}

function pump(): void {
  if (current || queue.length === 0) return;
  const pending = queue.shift()!;
  thread ??= startThread();
  const worker = thread;
  const timer = setTimeout(() => {
    endThread(worker, { verdict: { ok: false, stopped: `it took longer than ${CHECK_DEADLINE_MS / 1000} s` } });
    void worker.terminate();
  }, CHECK_DEADLINE_MS);
  current = { pending, timer };
  worker.postMessage({ id: pending.id, ...pending.message });
}

function ask(message: Pending["message"]): Promise<Record<string, unknown>> {
  return new Promise((resolve) => {
    queue.push({ id: nextId++, message, resolve });
    pump();
  });
}

/** Judges `value` against `schema` (AJV, coercing as tool arguments are), never holding this thread. */
export async function judgeAgainstSchema(schema: unknown, value: unknown): Promise<SchemaVerdict> {
  return (await ask({ schema, value })).verdict as SchemaVerdict;
}

/** How many compiled schemas the thread holds now (0 when it is not running). For tests and metrics. */
export async function cachedSchemas(): Promise<number> {
  if (!thread) return 0;
  return (await ask({ stats: true })).cached as number;
}
