/**
 * Crash harness: real worker processes, real `kill -9`. A run of the scripted
 * scenario is started from this process, the first worker is killed when a
 * condition on its execution log or the run's history holds, and a fresh
 * worker process finishes the run.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { randomUUID } from "node:crypto";
import { existsSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Client } from "@temporalio/client";
import { startAgentRun, type AgentRunHandle } from "../../../src/client/client.js";
import { sharedBundleFile } from "../bundles.js";
import type { AgentMessage, AgentRunResult } from "../../../src/shared/contracts.js";
import { MODEL_REF, type Variant } from "./scenario.js";
import { nodeEntry } from "../entry.js";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "../../..");

export interface LogEntry {
  event: "tool_start" | "tool_end" | "model_call" | "streaming" | "turn_end";
  tool?: string;
  toolCallId?: string;
  results?: number;
  turn?: number;
  /** model_call: the messages the model was given. */
  seen?: AgentMessage[];
  pid: number;
  at: number;
}

/**
 * The complete entries of an execution log. A worker may be appending a line (a model call's context runs to
 * kilobytes) while this reads: the text after the last newline is not an entry yet.
 */
export function readLog(file: string): LogEntry[] {
  if (!existsSync(file)) return [];
  const lines = readFileSync(file, "utf8").split("\n");
  lines.pop();
  return lines.filter(Boolean).map((line) => JSON.parse(line) as LogEntry);
}

/** Polls an observation (a log file, a history) until it holds; fails with `what` after `ms`. */
export async function waitFor(check: () => boolean | Promise<boolean>, ms: number, what: string): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

export interface ChildWorker {
  pid: number;
  /** The queue only this worker polls (it prints it when ready). */
  ownQueue: string;
  readyAt: number;
  kill(): Promise<void>;
  stop(): Promise<void>;
  /** SIGSTOP: the process freezes (a GC pause, a frozen VM) without its connections closing. */
  pause(): void;
  /** SIGCONT. */
  resume(): void;
}

export interface HarnessConfig {
  address: string;
  bundlePath: string;
  logFile: string;
  taskQueue: string;
  variant: Variant;
  /** Marks this worker's tool outputs and replies (`[tag]`), to tell two executions apart. */
  tag?: string;
  /** How long the `slow` and `write` tools take; default 3000. */
  slowMs?: number;
  /** The faux model's speed; default 60 tokens/s. */
  tokensPerSecond?: number;
  /** Mark the idempotent tools `fast` (local activities). */
  localTools?: boolean;
  /** `workerOptions.stickyQueueScheduleToStartTimeout` (e.g. "1s"); default the worker's own. */
  stickyTimeout?: string;
  /** The workers' blob store (JAI_BLOB_STORE, payloads of 1 KB and more go there); default none. */
  blobStore?: string;
}

/** A test file's folder for its child workers' logs, one per scenario, and the workflow bundle they load. */
export interface HarnessDir {
  dir: string;
  /** A scenario on a fresh task queue (named after the folder) with its own log file. */
  config(variant?: Variant, extra?: Partial<HarnessConfig>): HarnessConfig;
  remove(): Promise<void>;
}

/** Makes a `HarnessDir` under the system's temporary folder; `name` prefixes it and its task queues. */
export async function harnessDir(name: string): Promise<HarnessDir> {
  const dir = await mkdtemp(path.join(os.tmpdir(), `jai-${name}-`));
  const bundlePath = await sharedBundleFile("default");
  return {
    dir,
    config(variant = "main", extra = {}) {
      // Not helpers.ts' uniqueId: that module needs jest, and scripts/record-histories.ts runs this harness without it.
      const taskQueue = `${name}-${randomUUID()}`;
      const logFile = path.join(dir, `${taskQueue}.log`);
      return {
        address: process.env.TEMPORAL_ADDRESS!,
        bundlePath,
        logFile,
        taskQueue,
        variant,
        ...extra,
      };
    },
    remove: () => rm(dir, { recursive: true, force: true }),
  };
}

function exited(child: ChildProcess): Promise<void> {
  return child.exitCode !== null || child.signalCode !== null
    ? Promise.resolve()
    : new Promise((r) => child.once("exit", () => r()));
}

/** Starts `test/support/crash/worker-main.ts` in a new Node process and waits until it polls. */
export async function startChildWorker(config: HarnessConfig): Promise<ChildWorker> {
  const child = spawn(process.execPath, [...nodeEntry(path.join(here, "worker-main.ts"))], {
    cwd: root,
    env: {
      ...process.env,
      NODE_OPTIONS: "",
      TEMPORAL_ADDRESS: config.address,
      CRASH_BUNDLE: config.bundlePath,
      CRASH_LOG: config.logFile,
      CRASH_TASK_QUEUE: config.taskQueue,
      CRASH_VARIANT: config.variant,
      CRASH_TAG: config.tag ?? "",
      CRASH_SLOW_MS: String(config.slowMs ?? 3000),
      CRASH_TOKENS_PER_SECOND: String(config.tokensPerSecond ?? 60),
      CRASH_LOCAL_TOOLS: config.localTools ? "1" : "",
      CRASH_STICKY_TIMEOUT: config.stickyTimeout ?? "",
      JAI_BLOB_STORE: config.blobStore ?? "",
      JAI_BLOB_THRESHOLD: config.blobStore ? "1k" : "",
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  let stderr = "";
  child.stderr?.on("data", (d: Buffer) => (stderr = (stderr + d.toString()).slice(-3000)));
  let ownQueue = "";
  await new Promise<void>((resolve, reject) => {
    child.stdout?.on("data", (d: Buffer) => {
      const ready = /ready ?(\S*)/.exec(d.toString());
      if (ready) {
        ownQueue = ready[1];
        resolve();
      }
    });
    child.once("exit", (code) => reject(new Error(`worker process exited (${code}) before it was ready: ${stderr}`)));
  });
  return {
    pid: child.pid!,
    ownQueue,
    readyAt: Date.now(),
    async kill() {
      child.kill("SIGKILL");
      await exited(child);
    },
    async stop() {
      child.kill("SIGCONT");
      child.kill("SIGTERM");
      await exited(child);
    },
    pause: () => void child.kill("SIGSTOP"),
    resume: () => void child.kill("SIGCONT"),
  };
}

/** Tool-call ids whose activity the server had recorded as completed. */
export async function completedToolCalls(handle: AgentRunHandle): Promise<string[]> {
  const history = await handle.workflow.fetchHistory();
  const events = history.events ?? [];
  const ids: string[] = [];
  for (const e of events) {
    // A fast tool's call: a local activity marker whose output names the call.
    const marker = e.markerRecordedEventAttributes;
    if (marker?.markerName === "core_local_activity") {
      const result = marker.details?.result?.payloads?.[0]?.data;
      const output = result ? (JSON.parse(Buffer.from(result).toString()) as { toolCallId?: string }) : undefined;
      if (output?.toolCallId) ids.push(output.toolCallId);
    }
    const done = e.activityTaskCompletedEventAttributes;
    if (!done) continue;
    const scheduled = events.find(
      (s) => Number(s.eventId) === Number(done.scheduledEventId),
    )?.activityTaskScheduledEventAttributes;
    if (scheduled?.activityType?.name !== "executeTool") continue;
    const id = /^tool-\d+-\d+-(.*)$/.exec(scheduled.activityId ?? "")?.[1];
    if (id) ids.push(id);
  }
  return ids;
}

/** Drops what legitimately differs between two executions of the same script. */
export function normalizeTranscript(messages: AgentMessage[]): unknown[] {
  return messages.map((m) => {
    const { timestamp: _t, ...rest } = m as AgentMessage & { responseId?: string };
    delete (rest as { responseId?: string }).responseId;
    return rest;
  });
}

export interface ScenarioRun {
  result: AgentRunResult;
  handle: AgentRunHandle;
  log: LogEntry[];
  firstPid: number;
  secondPid?: number;
  completedBeforeKill: string[];
  /** New worker ready -> run completed. */
  recoveryMs?: number;
  /** New worker ready -> its first model call or tool start (the run moving again). */
  progressMs?: number;
  /** kill -9 -> the new worker's first model call or tool start. */
  sinceKillMs?: number;
}

/** How the scenario's run is started: the crash tests' short timeouts, or Temporal's and the loop's defaults. */
export interface StartOptions {
  /** The model activity's heartbeat timeout; default "2s". */
  heartbeatTimeout?: string;
  /** The run's workflow task timeout; default "2s", `null` for Temporal's default (10 s). */
  workflowTaskTimeout?: string | null;
}

/** Starts the scenario's run on `config`'s task queue. */
export function startScenarioRun(
  client: Client,
  config: HarnessConfig,
  options: StartOptions = {},
): Promise<AgentRunHandle> {
  const workflowTaskTimeout = options.workflowTaskTimeout === undefined ? "2s" : options.workflowTaskTimeout;
  return startAgentRun(client, {
    taskQueue: config.taskQueue,
    workflowId: `crash-${config.taskQueue}`,
    model: MODEL_REF,
    prompt: "Run the crash scenario",
    maxTurns: 30,
    modelActivity: { heartbeatTimeout: options.heartbeatTimeout ?? "2s", retry: { initialInterval: "200ms" } },
    ...(workflowTaskTimeout ? { workflowTaskTimeout } : {}),
  });
}

/** The contexts the model was given, per call in log order (every process, retried calls included). */
export function seenContexts(log: LogEntry[]): AgentMessage[][] {
  return log.filter((e) => e.event === "model_call" && e.seen).map((e) => e.seen!);
}

/** Runs the scenario; when `killWhen` is given, kills the first worker once it holds and lets a second one finish. */
export async function runScenario(
  client: Client,
  config: HarnessConfig,
  killWhen?: (log: LogEntry[], handle: AgentRunHandle) => boolean | Promise<boolean>,
  start: StartOptions = {},
): Promise<ScenarioRun> {
  const first = await startChildWorker(config);
  const handle = await startScenarioRun(client, config, start);
  if (!killWhen) {
    const result = await handle.result();
    await first.stop();
    return { result, handle, log: readLog(config.logFile), firstPid: first.pid, completedBeforeKill: [] };
  }
  await waitFor(() => killWhen(readLog(config.logFile), handle), 30000, "the kill point");
  await first.kill();
  const killedAt = Date.now();
  const completedBeforeKill = await completedToolCalls(handle);
  const second = await startChildWorker(config);
  const result = await handle.result();
  const recoveryMs = Date.now() - second.readyAt;
  await second.stop();
  const log = readLog(config.logFile);
  const firstMove = log.find((e) => e.pid === second.pid && (e.event === "model_call" || e.event === "tool_start"));
  const progressMs = firstMove ? firstMove.at - second.readyAt : undefined;
  const sinceKillMs = firstMove ? firstMove.at - killedAt : undefined;
  return {
    result,
    handle,
    log,
    firstPid: first.pid,
    secondPid: second.pid,
    completedBeforeKill,
    recoveryMs,
    progressMs,
    sinceKillMs,
  };
}
