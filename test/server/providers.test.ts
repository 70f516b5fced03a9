/**
 * Real providers over real HTTP: @jai/ai's OpenAI and Anthropic providers talk
 * to a local wire-format server inside the real workflow, with scripted faults.
 */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { inspect } from "node:util";
import { DefaultLogger, Runtime } from "@temporalio/worker";
import { Type, type Api, type Model } from "@jai/ai";
import { startAgentRun } from "../../src/client/client.js";
import type { AgentEvent, AgentTool } from "../../src/shared/contracts.js";
import { openTestEnv, testWorker, textOf, uniqueId, type TestEnv } from "../support/helpers.js";
import { ProviderServer, type Step } from "../support/provider-server.js";

const SENTINEL = "sk-ant-api03-SENTINEL-0123456789abcdef";
const logs: string[] = [];
let env: TestEnv;
let server: ProviderServer;

beforeAll(async () => {
  // Installed before openTestEnv so every worker log line of this file is captured (and checked for the key).
  Runtime.install({
    logger: new DefaultLogger(
      "INFO",
      (entry) => void logs.push(`${entry.message} ${inspect(entry.meta, { depth: 6 })}`),
    ),
  });
  env = await openTestEnv();
  server = await new ProviderServer().start();
});
afterAll(async () => {
  await server?.stop();
  await env?.close();
});

const lookup: AgentTool = {
  name: "lookup",
  description: "Looks a word up",
  parameters: Type.Object({ word: Type.String() }),
  async execute(_id, args: any) {
    return { content: [{ type: "text", text: `${args.word} means hello` }] };
  },
};

/** One run against the local server with fast retries and a short heartbeat. */
async function run(
  model: Model<Api>,
  steps: Step[],
  options: { maxAttempts?: number; heartbeat?: string; apiKey?: string } = {},
) {
  server.script(steps);
  const { worker, taskQueue, events } = await testWorker(env, [lookup], {
    // The local server's model is the worker's own: a run cannot point a provider at a base URL of its choice.
    models: [model],
    getApiKey: () => options.apiKey ?? SENTINEL,
  });
  const handle = await startAgentRun(env.client, {
    taskQueue,
    workflowId: uniqueId("provider"),
    model,
    prompt: "What does ciao mean?",
    modelActivity: {
      heartbeatTimeout: options.heartbeat ?? "5s",
      retry: { initialInterval: "100ms", maximumAttempts: options.maxAttempts ?? 3 },
    },
  });
  const result = await worker.runUntil(handle.result());
  const history = await handle.workflow.fetchHistory();
  const modelStarts = (history.events ?? []).flatMap((e) => {
    const started = e.activityTaskStartedEventAttributes;
    const scheduled = history.events?.find((s) => Number(s.eventId) === Number(started?.scheduledEventId));
    return started && scheduled?.activityTaskScheduledEventAttributes?.activityType?.name === "streamAssistantMessage"
      ? [started]
      : [];
  });
  return {
    result,
    events,
    history,
    handle,
    attempts: modelStarts.map((s) => s.attempt),
    lastFailures: modelStarts.map((s) => s.lastFailure?.applicationFailureInfo?.type),
  };
}

const answer: Step = { text: "Ciao means hello.", usage: { input: 40, output: 6 } };

describe.each([
  ["OpenAI Chat Completions", (s: ProviderServer) => s.openAIModel()],
  ["Anthropic Messages", (s: ProviderServer) => s.anthropicModel()],
])("%s", (_name, makeModel) => {
  it("streams text and tool calls through the real provider, key from the worker", async () => {
    const { result, events } = await run(makeModel(server), [
      {
        text: "Let me look.",
        toolCalls: [{ id: "call_1", name: "lookup", args: { word: "ciao" } }],
        usage: { input: 30, output: 12 },
      },
      answer,
    ]);
    expect(result.stopReason).toBe("stop");
    expect(result.messages.map((m) => m.role)).toEqual(["user", "assistant", "toolResult", "assistant"]);
    const call = result.messages[1];
    expect(call.role === "assistant" && call.content.find((c) => c.type === "toolCall")).toMatchObject({
      id: "call_1",
      name: "lookup",
      arguments: { word: "ciao" },
    });
    expect(textOf(result.messages[2])).toBe("ciao means hello");
    expect(textOf(result.messages[3])).toBe("Ciao means hello.");
    expect(result.usage).toMatchObject({ input: 70, output: 18 });
    expect(result.usage.cost.total).toBeGreaterThan(0);
    expect(events.filter((e) => e.type === "message_update").length).toBeGreaterThan(3);
    // The key reached the provider, and the tool result went back in the second request.
    const auth = server.requests[0].headers.authorization ?? server.requests[0].headers["x-api-key"];
    expect(String(auth)).toContain(SENTINEL);
    expect(server.requests[0].headers["x-jai-model-call"]).toBeUndefined();
    expect(JSON.stringify(server.requests[1].body)).toContain("ciao means hello");
  });

  it.each([
    [500, "ModelUnavailable"],
    [503, "ModelUnavailable"],
    [529, "ModelOverloaded"],
  ])("retries HTTP %i through Temporal only (%s), counting usage once", async (status, type) => {
    const { result, attempts, lastFailures } = await run(makeModel(server), [
      { fault: { kind: "status", status } },
      answer,
    ]);
    expect(result.stopReason).toBe("stop");
    expect(server.requests).toHaveLength(2); // the SDK did not retry on its own
    expect(attempts).toEqual([2]);
    expect(lastFailures).toEqual([type]);
    expect(result.usage).toMatchObject({ input: 40, output: 6 });
  });

  it("waits for retry-after on a 429", async () => {
    const { result, attempts, lastFailures, history } = await run(makeModel(server), [
      { fault: { kind: "status", status: 429, headers: { "retry-after": "1" } } },
      answer,
    ]);
    expect(result.stopReason).toBe("stop");
    expect(attempts).toEqual([2]);
    expect(lastFailures).toEqual(["ModelRateLimited"]);
    expect(server.requests[1].at - server.requests[0].at).toBeGreaterThanOrEqual(950); // not the 100 ms backoff
    // The same delay, read from history: scheduled -> attempt 2 started.
    const ms = (e: any) => Number(e.eventTime.seconds) * 1000 + Math.floor(e.eventTime.nanos / 1e6);
    const events = history.events ?? [];
    const started = events.find((e) => e.activityTaskStartedEventAttributes?.attempt === 2)!;
    const scheduled = events.find(
      (e) => Number(e.eventId) === Number(started.activityTaskStartedEventAttributes!.scheduledEventId),
    )!;
    expect(ms(started) - ms(scheduled)).toBeGreaterThanOrEqual(1000);
  });

  it("re-requests a stream cut mid-way", async () => {
    const { result, attempts, lastFailures } = await run(makeModel(server), [
      { ...answer, fault: { kind: "reset", afterChunks: 3 } },
      answer,
    ]);
    expect(textOf(result.messages.at(-1))).toBe("Ciao means hello.");
    expect(attempts).toEqual([2]);
    expect(lastFailures).toEqual(["ModelStreamInterrupted"]);
  });

  it("re-requests a stream with malformed JSON", async () => {
    const { result, attempts } = await run(makeModel(server), [
      { ...answer, fault: { kind: "malformed", afterChunks: 2 } },
      answer,
    ]);
    expect(textOf(result.messages.at(-1))).toBe("Ciao means hello.");
    expect(attempts).toEqual([2]);
  });

  it("catches a stalled stream within the heartbeat timeout and retries it", async () => {
    // The stream stalls far longer than the heartbeat timeout (5 s), the watchdog's limit: the retry can only come
    // from the watchdog cutting the stream (a stall that ended would have completed the first attempt), and its
    // failure says so. Not how soon: a busy machine checks later.
    const { result, attempts, lastFailures } = await run(makeModel(server), [
      { ...answer, fault: { kind: "stall", afterChunks: 2, ms: 20_000 } },
      answer,
    ]);
    expect(textOf(result.messages.at(-1))).toBe("Ciao means hello.");
    expect(attempts).toEqual([2]);
    expect(lastFailures).toEqual(["ModelStreamInterrupted"]);
    expect(server.requests).toHaveLength(2);
  });

  it("ends the run with the provider's message on a permanent error inside the stream, without retrying", async () => {
    const { result, attempts } = await run(makeModel(server), [
      {
        ...answer,
        fault: {
          kind: "streamError",
          afterChunks: 3,
          type: "invalid_request_error",
          message: "messages.2.content: tool_use ids must be unique",
        },
      },
    ]);
    expect(result.stopReason).toBe("error");
    expect(result.errorMessage).toContain("messages.2.content: tool_use ids must be unique");
    expect(result.errorMessage).not.toMatch(/Controller|Invalid state/);
    expect(server.requests).toHaveLength(1);
    expect(attempts).toEqual([1]);
  });

  it("retries a transient error inside the stream through Temporal", async () => {
    const transient =
      makeModel(server).api === "anthropic-messages"
        ? { type: "overloaded_error", message: "Overloaded" }
        : { type: "server_error", message: "The server had an error while processing your request. Sorry about that!" };
    const { result, attempts, lastFailures } = await run(makeModel(server), [
      { ...answer, fault: { kind: "streamError", afterChunks: 3, ...transient } },
      answer,
    ]);
    expect(textOf(result.messages.at(-1))).toBe("Ciao means hello.");
    expect(attempts).toEqual([2]);
    expect(lastFailures).toEqual([
      makeModel(server).api === "anthropic-messages" ? "ModelOverloaded" : "ModelUnavailable",
    ]);
  });

  it("ends the turn on a 400 with the provider's message, without retrying", async () => {
    const { result } = await run(makeModel(server), [
      { fault: { kind: "status", status: 400, message: "messages.0: unexpected field" } },
    ]);
    expect(result.stopReason).toBe("error");
    expect(result.errorMessage).toMatch(/rejected the request \(HTTP 400: .*messages\.0: unexpected field/);
    expect(server.requests).toHaveLength(1);
  });

  it("ends the turn on a 401 naming the provider's env var, never the key", async () => {
    const model = makeModel(server);
    const { result, events } = await run(model, [
      { fault: { kind: "status", status: 401, message: `invalid api key ${SENTINEL}` } },
    ]);
    expect(result.stopReason).toBe("error");
    expect(result.errorMessage).toContain(`Authentication failed for provider "${model.provider}"`);
    expect(result.errorMessage).toContain(model.provider === "anthropic" ? "ANTHROPIC_API_KEY" : "OPENAI_API_KEY");
    expect(result.errorMessage).not.toContain("SENTINEL");
    expect(JSON.stringify(events)).not.toContain("SENTINEL");
    expect(server.requests).toHaveLength(1);
  });
});

describe("failures around the provider", () => {
  it("turns a context overflow into a clear error", async () => {
    const { result } = await run(server.anthropicModel(), [
      { fault: { kind: "status", status: 400, message: "prompt is too long: 250000 tokens > 200000 maximum" } },
    ]);
    expect(result.stopReason).toBe("error");
    expect(result.errorMessage).toMatch(
      /^Context overflow: the conversation no longer fits anthropic\/claude-test's context window \(200000 tokens\)/,
    );
  });

  it("retries an unreachable server, then ends the run with a clear error", async () => {
    const dead = new ProviderServer();
    await dead.start();
    await dead.stop();
    const { result, attempts } = await run(server.openAIModel({ baseUrl: `http://127.0.0.1:${dead.port}/v1` }), [], {
      maxAttempts: 2,
    });
    expect(result.stopReason).toBe("error");
    expect(result.errorMessage).toMatch(/Model call failed: connection to openai failed/);
    expect(attempts).toEqual([2]);
  });

  it("keeps the API key out of history, events and logs", async () => {
    const { history, events } = await run(server.anthropicModel(), [
      { fault: { kind: "status", status: 429, message: `slow down ${SENTINEL}` } },
      { thinking: "The user wants a translation.", toolCalls: [{ id: "t1", name: "lookup", args: { word: "ciao" } }] },
      answer,
    ]);
    // Payload bytes are decoded as text, so a key inside any payload would show.
    const historyText = JSON.stringify(history).replace(/"data":"([A-Za-z0-9+/=]+)"/g, (_m, b64: string) =>
      Buffer.from(b64, "base64").toString("utf8"),
    );
    expect(historyText).toContain("The user wants a translation."); // the decoding works
    const everything = historyText + JSON.stringify(events as AgentEvent[]) + logs.join("\n");
    expect(logs).toContainEqual(expect.stringContaining("slow down")); // the failure was logged...
    expect(everything).not.toContain("SENTINEL"); // ...without the key
    expect(String(server.requests[0].headers["x-api-key"])).toBe(SENTINEL);
  });

  it("redacts the resolved key whatever its shape: pieces of it and its base64 echoed in an error body never reach history, events or logs", async () => {
    const key = "gsk_R8tWq2LmZ5xV9nB3cK7pY1sD4fH6jG0a";
    const b64 = Buffer.from(key).toString("base64");
    const echo = `Invalid API Key ending in ${key.slice(-12)} (sent as Basic ${b64}; header ${Buffer.from(`Bearer ${key}`).toString("base64")})`;
    const { result, history, events } = await run(
      server.openAIModel({ provider: "groq" }),
      [
        { fault: { kind: "status", status: 429, message: `retry later, key ${encodeURIComponent(key)}` } },
        { fault: { kind: "status", status: 400, message: echo } },
      ],
      { apiKey: key },
    );
    expect(result.stopReason).toBe("error");
    expect(result.errorMessage).toContain("Invalid API Key ending in [redacted]");
    expect(String(server.requests[0].headers.authorization)).toBe(`Bearer ${key}`);
    const historyText = JSON.stringify(history).replace(/"data":"([A-Za-z0-9+/=]+)"/g, (_m, data: string) =>
      Buffer.from(data, "base64").toString("utf8"),
    );
    expect(historyText).toContain("Invalid API Key ending in"); // the decoding works
    const everything = historyText + JSON.stringify(events as AgentEvent[]) + logs.join("\n");
    expect(logs).toContainEqual(expect.stringContaining("retry later")); // the retried failure was logged...
    for (let i = 0; i + 8 <= key.length; i++) expect(everything).not.toContain(key.slice(i, i + 8)); // ...without any piece of the key
    for (let i = 4; i + 12 <= b64.length - 4; i += 4) expect(everything).not.toContain(b64.slice(i, i + 12));
  });

  it("keeps Anthropic thinking blocks, with their signature, in the transcript and the next request", async () => {
    const { result } = await run(server.anthropicModel(), [
      { thinking: "The user wants a translation.", toolCalls: [{ id: "t1", name: "lookup", args: { word: "ciao" } }] },
      answer,
    ]);
    const first = result.messages[1];
    expect(first.role === "assistant" && first.content[0]).toEqual({
      type: "thinking",
      thinking: "The user wants a translation.",
      thinkingSignature: "sig-test",
    });
    expect(JSON.stringify(server.requests[1].body)).toContain("sig-test");
  });
});
