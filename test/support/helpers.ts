/** Shared test plumbing: a client and connection to the jest run's dev server, faux models, collected events. */
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll } from "@jest/globals";
import { Client, WorkflowFailedError } from "@temporalio/client";
import { ApplicationFailure } from "@temporalio/common";
import { DefaultLogger, NativeConnection, Runtime } from "@temporalio/worker";
import { registerFauxProvider, Type, type FauxResponseStep } from "@jai/ai";
import { createAgentWorker, type AgentWorkerOptions } from "../../src/worker/worker.js";
import { sharedBundle } from "./bundles.js";
import { connectTestClient } from "./client-connection.js";
import type { AgentEvent, AgentRunResult, AgentTool } from "../../src/shared/contracts.js";

export interface TestEnv {
  client: Client;
  connection: NativeConnection;
  bundle: { code: string };
  close(): Promise<void>;
}

/** Call once per test file (beforeAll): connects; the workflow bundle is the jest run's shared one. */
export async function openTestEnv(): Promise<TestEnv> {
  try {
    Runtime.install({ logger: new DefaultLogger("WARN") });
  } catch {
    // Already installed by an earlier test file in this process.
  }
  const address = process.env.TEMPORAL_ADDRESS;
  if (!address) throw new Error("TEMPORAL_ADDRESS is not set: run the tests through jest's globalSetup");
  const clientConnection = await connectTestClient(address);
  const connection = await NativeConnection.connect({ address });
  const bundle = await sharedBundle();
  return {
    client: new Client({ connection: clientConnection }),
    connection,
    bundle,
    async close() {
      await connection.close();
      await clientConnection.close();
    },
  };
}

export const uniqueId = (prefix: string) => `${prefix}-${randomUUID()}`;

/** The patch ids a history's `core_patch` markers recorded, in order. */
export function patchIds(events: { markerRecordedEventAttributes?: any }[] | null | undefined): string[] {
  return (events ?? [])
    .filter((e) => e.markerRecordedEventAttributes?.markerName === "core_patch")
    .map((e) =>
      Buffer.from(e.markerRecordedEventAttributes.details?.["patch-data"]?.payloads?.[0]?.data ?? []).toString(),
    )
    .map((data) => (JSON.parse(data) as { id: string }).id);
}

/** A faux model of its own for one test: scripted responses, no shared queue between tests. */
export function fauxModel(responses: FauxResponseStep[], options: { tokensPerSecond?: number } = {}) {
  const faux = registerFauxProvider({ tokensPerSecond: options.tokensPerSecond });
  faux.setResponses(responses);
  return faux;
}

/** A worker for one test on its own task queue, collecting every event. */
export async function testWorker(env: TestEnv, tools: AgentTool<any>[], extra: Partial<AgentWorkerOptions> = {}) {
  const events: AgentEvent[] = [];
  const taskQueue = uniqueId("tq");
  const worker = await createAgentWorker({
    connection: env.connection,
    taskQueue,
    tools,
    workflowBundle: env.bundle,
    onEvent: (event) => void events.push(event),
    ...extra,
  });
  return { worker, taskQueue, events };
}

/** Event types with message roles, runs of message_update folded into one, for exact order assertions. */
export function eventTrace(events: AgentEvent[]): string[] {
  const trace = events.map((e) => {
    if (e.type === "message_update") return "message_update";
    if (e.type === "message_start" || e.type === "message_end") return `${e.type}:${e.message.role}`;
    if (e.type.startsWith("tool_execution")) return `${e.type}:${(e as { toolName: string }).toolName}`;
    return e.type;
  });
  return trace.filter((t, i) => !(t === "message_update" && trace[i - 1] === "message_update"));
}

/** A promise with its resolve function, for tests that step through a run without sleeping. */
export function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}

/** Waits for `promise`, failing with `what` after `ms` instead of hanging the test. */
export function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout;
  const timeout = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms)),
  );
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/**
 * Resolves with a run's state once `ok` holds, polling its state query until `ms` runs out (a run that went another
 * way fails the test instead of hanging it and loading the server for the rest of the file); `within` bounds a
 * single query that never answers as well. The pause between queries grows from 25 ms to 500 ms: a query is work
 * for the worker under test, and 60 runs asked every 25 ms on a busy machine starve the very tasks being waited on.
 */
export async function stateWhen<S>(
  handle: { state(): Promise<S> },
  ok: (state: S) => boolean,
  what: string,
  ms = 30_000,
): Promise<S> {
  let state!: S;
  // A query the server gave up on because the worker was busy (DEADLINE_EXCEEDED), or refused while a workflow task
  // that timed out on a busy machine is retried, is load, not a verdict: ask again. (A task that keeps failing for
  // another reason keeps refusing: the wait ends at its deadline, naming the last refusal.)
  const busy = (err: unknown) =>
    /query timed out before a worker could process it|Workflow Task in failed state/.test(errorChain(err));
  let refused: string | undefined;
  const deadline = Date.now() + ms;
  const ask = async () => {
    try {
      return ok((state = await handle.state()));
    } catch (err) {
      if (!busy(err)) throw err;
      refused = errorChain(err);
      return false;
    }
  };
  await within(
    (async () => {
      for (let pause = 25; !(await ask()); pause = Math.min(500, pause * 1.5)) {
        if (Date.now() > deadline) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
        await new Promise((r) => setTimeout(r, pause));
      }
    })(),
    ms,
    what,
  ).catch((err: unknown) => {
    if (!(err instanceof Error) || !/^timed out/.test(err.message)) throw err;
    // What the run last said, and the last refusal: what a person debugging a run that never got there needs first.
    const last = state === undefined ? "no answer" : `last answer ${JSON.stringify(state).slice(0, 600)}`;
    throw new Error(`${err.message} (${last}${refused ? `; last refusal: ${refused}` : ""})`);
  });
  return state;
}

/** The text of an assistant or tool result message. */
export function textOf(message: { content: unknown } | undefined): string {
  const content = message?.content;
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .filter((c) => c.type === "text")
    .map((c) => c.text)
    .join("");
}

/**
 * What breaks pi-agent-core's tool-call structure in a run's events (empty when
 * clean): each started call ends once, its updates in between; a result message
 * comes after its call's end, as a start/end pair, while no call is running;
 * at agent_end every tool call of every assistant message has one result.
 */
export function toolEventProblems(events: AgentEvent[]): string[] {
  const problems: string[] = [];
  const state = new Map<string, "running" | "ended" | "result">();
  const calls: string[] = [];
  events.forEach((e, i) => {
    if (e.type === "tool_execution_start") {
      if (state.has(e.toolCallId)) problems.push(`${e.toolCallId} started twice`);
      state.set(e.toolCallId, "running");
    } else if (e.type === "tool_execution_update" && state.get(e.toolCallId) !== "running") {
      problems.push(`${e.toolCallId} updated while not running`);
    } else if (e.type === "tool_execution_end") {
      if (state.get(e.toolCallId) !== "running") problems.push(`${e.toolCallId} ended while not running`);
      state.set(e.toolCallId, "ended");
    } else if (e.type === "message_end" && e.message.role === "assistant") {
      for (const c of e.message.content) if (c.type === "toolCall") calls.push(c.id);
    } else if (e.type === "message_start" && e.message.role === "toolResult") {
      const id = e.message.toolCallId;
      const next = events[i + 1];
      if (next?.type !== "message_end" || next.message.role !== "toolResult" || next.message.toolCallId !== id)
        problems.push(`${id}'s result message_start is not followed by its message_end`);
      if (state.get(id) === "result") problems.push(`${id} has two results`);
      for (const [other, s] of state)
        if (s === "running") problems.push(`${id}'s result came while ${other} was running`);
      state.set(id, "result");
    } else if (e.type === "agent_end") {
      for (const id of calls) if (state.get(id) !== "result") problems.push(`${id} has no result at agent_end`);
    }
  });
  return problems;
}

/** The messages of an error and of its causes (a validator's rejection arrives as the cause of an update failure). */
export function errorChain(err: unknown): string {
  const parts: string[] = [];
  for (let e = err as { message?: string; cause?: unknown } | undefined; e; e = e.cause as typeof e)
    parts.push(String(e.message));
  return parts.join(" | ");
}

/** What `promise` was rejected with (its error chain); fails when it resolves. */
export async function rejection(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
  } catch (err) {
    return errorChain(err);
  }
  throw new Error("expected a rejection");
}

/** A tool that waits until released, so updates can be sent while the run is busy with it. */
export function gateTool(name = "gate", mode: "parallel" | "sequential" = "parallel", releaseWithinMs = 120_000) {
  const entered = deferred();
  const release = deferred();
  let executed = false;
  const tool: AgentTool = {
    name,
    description: name,
    parameters: Type.Object({}),
    executionMode: mode,
    async execute() {
      executed = true;
      entered.resolve();
      await within(release.promise, releaseWithinMs, `${name} release`);
      return { content: [{ type: "text", text: `${name} done` }] };
    },
  };
  return { tool, entered, release, executed: () => executed };
}

/** The failure a run failed with (its workflow's cause), or the result when it did not fail. */
export async function outcome(result: Promise<AgentRunResult>): Promise<ApplicationFailure | AgentRunResult> {
  try {
    return await result;
  } catch (err) {
    if (err instanceof WorkflowFailedError && err.cause instanceof ApplicationFailure) return err.cause;
    throw err;
  }
}

/**
 * The jest run's dev server for this test file: connects before its tests (beforeAll) and closes after them.
 * Call at the top level of a test file: `const env = withServer();`.
 */
export function withServer(): TestEnv {
  let opened: TestEnv | undefined;
  beforeAll(async () => {
    opened = await openTestEnv();
  }, 60_000);
  afterAll(async () => {
    await opened?.close();
  });
  const get = () => {
    if (!opened) throw new Error("withServer(): the server is open only inside tests and hooks");
    return opened;
  };
  return {
    get client() {
      return get().client;
    },
    get connection() {
      return get().connection;
    },
    get bundle() {
      return get().bundle;
    },
    close: () => get().close(),
  };
}
