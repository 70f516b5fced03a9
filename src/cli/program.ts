/**
 * What every command of src/cli shares at its edges: reading its arguments (`parseCli`: node:util's parseArgs,
 * strict, with --help / -h and --debug), and ending (`runCli`): the exit code, and for a failure one line that
 * names the fix, or the usage after a usage mistake; never a stack trace unless --debug (or JAI_DEBUG=1) asks.
 *
 * Exit codes: 0 done (--help included); 1 failed or refused (no server, no codec key, no such run, ...);
 * 2 bad usage (an unknown flag, a missing argument, a bad value); a command may add its own (3: a tenant limit).
 */
import { parseArgs, type ParseArgsConfig } from "node:util";
import { nearestName } from "../shared/near-name.js";

/** Bad usage: printed with the command's usage, exit 2. */
export class UsageError extends Error {
  override name = "UsageError";
}

/** --help (or -h) was given: `parseCli` throws it, and the command's usage is printed on stdout, exit 0. */
export class HelpRequested extends Error {
  override name = "HelpRequested";
}

/** The one `<workflowId>` argument a command takes (show, watch), or the usage mistake that there is none or more. */
export function onlyWorkflowId(positionals: string[]): string {
  if (!positionals[0]) throw new UsageError("missing <workflowId>");
  if (positionals.length > 1) throw new UsageError(`unexpected argument "${positionals[1]}"`);
  return positionals[0];
}

/** A failure the command has already put in words: printed as is (one line), with its exit code. */
export class CliError extends Error {
  override name = "CliError";
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

/** No Temporal server answers at `address`: says how to start one or point the command at one. */
export class NoServerError extends CliError {
  override name = "NoServerError";
  constructor(
    readonly address: string,
    why: string,
  ) {
    super(
      `no Temporal server at ${address} (${why}): start one with \`npm run temporal\`, or point TEMPORAL_ADDRESS (or --address) at yours`,
    );
  }
}

/** --debug anywhere on the command line, or JAI_DEBUG=1: failures print their stack trace too. */
export const debugWanted = (argv: string[] = process.argv.slice(2), env: NodeJS.ProcessEnv = process.env) =>
  argv.includes("--debug") || env.JAI_DEBUG === "1";

type Options = NonNullable<ParseArgsConfig["options"]>;
export type ParsedValues = Record<string, string | boolean | string[] | undefined>;

const COMMON: Options = {
  help: { type: "boolean", short: "h" },
  debug: { type: "boolean" },
};

/**
 * node:util's parseArgs, strict, with --help / -h and --debug: a mistake is a `UsageError` in the user's words
 * (the unknown flag and the nearest known one, the flag missing its value); --help throws `HelpRequested`.
 */
export function parseCli(
  args: string[],
  options: Options,
  config: { allowPositionals?: boolean } = {},
): { values: ParsedValues; positionals: string[] } {
  const all = { ...COMMON, ...options };
  let parsed;
  try {
    parsed = parseArgs({ args, options: all, allowPositionals: config.allowPositionals ?? true, strict: true });
  } catch (err) {
    throw usageOf(err, Object.keys(all)) ?? err;
  }
  if (parsed.values.help) throw new HelpRequested();
  return { values: parsed.values as ParsedValues, positionals: parsed.positionals };
}

/**
 * For a command that ends on its own rather than through `runCli`: its arguments, read by `read`, or the process
 * ends here as `runCli` would end it (the usage on --help; the mistake and the usage, exit 2).
 */
export function argumentsOrExit<T>(usage: string, read: () => T): T {
  try {
    return read();
  } catch (err) {
    process.exit(reportFailure(err, usage));
  }
}

/** A parseArgs error as a UsageError in the user's words; undefined for any other error. */
function usageOf(err: unknown, known: string[] = []): UsageError | undefined {
  const code = (err as { code?: unknown } | undefined)?.code;
  if (typeof code !== "string" || !code.startsWith("ERR_PARSE_ARGS")) return undefined;
  const message = (err as Error).message;
  const unknown = /^Unknown option '(-{1,2}[^']+)'/.exec(message)?.[1];
  if (unknown) {
    const near = nearestName(unknown.replace(/^-+/, "").replace(/=.*$/, ""), known);
    return new UsageError(`unknown option ${unknown}${near ? ` (did you mean --${near}?)` : ""}`);
  }
  const missing = /^Option '(-\S+)(?:, (-\S+))?(?: <value>)?' argument missing/.exec(message);
  if (missing) return new UsageError(`${missing[2] ?? missing[1]} needs a value`);
  const positional = /^Unexpected argument '([^']*)'/.exec(message)?.[1];
  if (positional !== undefined) return new UsageError(`unexpected argument "${positional}"`);
  return new UsageError(message.split("\n")[0].replace(/\. To specify.*$/, ""));
}

/** The message of `err`'s first line, with gRPC's "14 UNAVAILABLE: " kept (it says what happened). */
const firstLine = (err: unknown) => (err instanceof Error ? err.message : String(err)).split("\n")[0].trim();

/** A connection error (grpc-js, the Rust core's tonic) as a NoServerError for `address`; undefined for any other. */
export function noServer(err: unknown, address: string): NoServerError | undefined {
  if (err instanceof NoServerError) return err;
  const text = err instanceof Error ? `${err.message} ${(err as { details?: string }).details ?? ""}` : String(err);
  if (/ConnectionRefused|ECONNREFUSED|Connection refused/i.test(text))
    return new NoServerError(address, "connection refused");
  if (/ENOTFOUND|EAI_AGAIN|failed to lookup|dns error|Name or service not known/i.test(text))
    return new NoServerError(address, "its host name does not resolve");
  if (/Failed to connect before the deadline|tcp connect error|transport error|UNAVAILABLE|ETIMEDOUT/i.test(text))
    return new NoServerError(address, "it does not answer");
  return undefined;
}

/**
 * The errors it puts in words, by name: Temporal's client errors and the codec's keep their names, and this
 * module stays light (no client loaded), so --help and a usage mistake answer at once.
 */
const KNOWN = [
  "UsageError",
  "CliError",
  "NoServerError",
  "CodecKeyError",
  "CodecConfigError",
  "WorkflowNotFoundError",
  "ScheduleNotFoundError",
  "WorkflowExecutionAlreadyStartedError",
];
const named = (err: unknown, name: string) => err instanceof Error && err.name === name;

/** What a failure prints (one line, or the message and the usage; the usage alone for --help) and its exit code. */
export function describeFailure(failure: unknown, usage?: string): { text: string; code: number } {
  if (failure instanceof HelpRequested) return { text: usage ?? "", code: 0 };
  // The error a wrapper carries (a query or a data converter failure around a codec key error) says more.
  let err = failure;
  for (let e = failure, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++)
    if (KNOWN.includes(e.name)) {
      err = e;
      break;
    }
  const usageError = err instanceof UsageError ? err : usageOf(err);
  if (usageError) return { text: usage ? `${usageError.message}\n${usage}` : usageError.message, code: 2 };
  if (err instanceof CliError) return { text: err.message, code: err.exitCode };
  if (named(err, "CodecKeyError")) return { text: `cannot decrypt the run: ${firstLine(err)}`, code: 1 };
  if (named(err, "CodecConfigError")) return { text: firstLine(err), code: 2 };
  // A history or describe call's NOT_FOUND says the same in gRPC's words; a schedule is a workflow underneath.
  const fields = (typeof err === "object" && err !== null ? err : {}) as { workflowId?: string; scheduleId?: string };
  const id = fields.workflowId ?? /workflow not found for ID: (\S+)/i.exec(firstLine(err))?.[1];
  const schedule = fields.scheduleId ?? /^temporal-sys-scheduler:(.*)$/.exec(id ?? "")?.[1];
  if (named(err, "ScheduleNotFoundError") || ((named(err, "WorkflowNotFoundError") || id) && schedule !== undefined))
    return { text: `no schedule "${schedule}" in this namespace (\`schedule list\` lists them)`, code: 1 };
  if (named(err, "WorkflowNotFoundError") || (id && /NOT_FOUND|not found/i.test(firstLine(err))))
    return {
      text: `no run ${id ? `"${id}" ` : ""}in this namespace (check the id, and --namespace / TEMPORAL_NAMESPACE)`,
      code: 1,
    };
  if (named(err, "WorkflowExecutionAlreadyStartedError"))
    return { text: `a workflow ${fields.workflowId} already exists`, code: 1 };
  const server = noServer(err, /at (\S+:\d+)/.exec(firstLine(err))?.[1] ?? "the configured address");
  if (server) return { text: server.message, code: 1 };
  return { text: firstLine(err), code: 1 };
}

/**
 * Prints what `describeFailure` says of `err` (on stdout for --help, else on stderr, with the stack trace when
 * `stack`); its exit code.
 */
export function reportFailure(err: unknown, usage?: string, stack = false): number {
  let said: { text: string; code: number };
  try {
    said = describeFailure(err, usage);
  } catch {
    said = { text: firstLine(err), code: 1 };
  }
  const { text, code } = said;
  if (code === 0) console.log(text);
  else console.error(text);
  if (code && stack && err instanceof Error && err.stack) console.error(err.stack);
  return code;
}

/**
 * Runs a command's `main` to its end: its exit code, or for a failure what `describeFailure` says on stderr
 * (with the stack trace only under --debug). A failure outside `main` (an uncaught exception, an unhandled
 * rejection of a background task: a bug, not a mistake of the person's) ends the same way but keeps its stack,
 * so a crashed worker's log says where. `usage` is printed after a usage mistake, and on stdout for --help.
 */
export function runCli(usage: string, main: () => Promise<number | void>): void {
  const debug = debugWanted();
  let ended = false;
  const fail = (err: unknown, outside = false) => {
    if (ended) return;
    ended = true;
    process.exit(reportFailure(err, usage, debug || outside));
  };
  process.on("uncaughtException", (err) => fail(err, true));
  process.on("unhandledRejection", (err) => fail(err, true));
  // A warning the code emits is a note in one line, not Node's two with its --trace-warnings advice.
  process.removeAllListeners("warning");
  process.on("warning", (w) => console.error(`note: ${w.message.replace(/\s*\n\s*/g, " ")}`));
  main().then(
    (code) => {
      if (ended) return;
      ended = true;
      process.exit(code ?? 0);
    },
    (err: unknown) => fail(err),
  );
}
