/** Activity tests in Temporal's MockActivityEnvironment: heartbeats, cancellation, events, API keys. No server. */
import { describe, expect, it } from "@jest/globals";
import { MockActivityEnvironment } from "@temporalio/testing";
import { CancelledFailure } from "@temporalio/common";
import { fauxAssistantMessage, fauxToolCall, Type, type Api, type AssistantMessage, type Model } from "@jai/ai";
import { createActivities } from "../../src/worker/activities/index.js";
import type { AgentEvent, AgentTool } from "../../src/shared/contracts.js";
import type { ExecuteToolOutput } from "../../src/shared/wire.js";
import { deferred, fauxModel, textOf, within } from "../support/helpers.js";

const input = (model: Model<Api>) => ({
  model,
  context: { epoch: 0, base: 0, append: [{ role: "user" as const, content: "hi", timestamp: 1 }] },
  tools: [],
  turn: 1,
});

describe("streamAssistantMessage", () => {
  it("heartbeats while the model streams and emits message_start/update", async () => {
    // Long enough for several timer beats (there is no heartbeat at the start).
    const faux = fauxModel(
      [fauxAssistantMessage("a fairly long answer that streams slowly, long enough for several heartbeats")],
      { tokensPerSecond: 40 },
    );
    const events: AgentEvent[] = [];
    const env = new MockActivityEnvironment({ heartbeatTimeoutMs: 300 });
    let heartbeats = 0;
    env.on("heartbeat", () => heartbeats++);
    const { streamAssistantMessage } = createActivities({ tools: [], onEvent: (e) => void events.push(e) });
    const message: AssistantMessage = await env.run(streamAssistantMessage, input(faux.getModel()));
    expect(message.stopReason).toBe("stop");
    expect(heartbeats).toBeGreaterThanOrEqual(3);
    expect(events[0].type).toBe("message_start");
    expect(events.slice(1).every((e) => e.type === "message_update")).toBe(true);
  });

  it("a call that answers within the first beat's delay sends no heartbeat (no server write)", async () => {
    const faux = fauxModel([fauxAssistantMessage("quick")]);
    const env = new MockActivityEnvironment({ heartbeatTimeoutMs: 30_000 });
    let heartbeats = 0;
    env.on("heartbeat", () => heartbeats++);
    const { streamAssistantMessage } = createActivities({ tools: [] });
    const message: AssistantMessage = await env.run(streamAssistantMessage, input(faux.getModel()));
    expect(message.stopReason).toBe("stop");
    expect(heartbeats).toBe(0);
  });

  it("aborts the stream when the activity is cancelled and hands back what had streamed", async () => {
    const faux = fauxModel([fauxAssistantMessage("x ".repeat(2000))], { tokensPerSecond: 50 });
    const env = new MockActivityEnvironment({ heartbeatTimeoutMs: 1000 });
    const firstUpdate = deferred();
    const { streamAssistantMessage } = createActivities({
      tools: [],
      onEvent: (e) => {
        if (e.type === "message_update" && e.assistantEvent.type === "text_delta") firstUpdate.resolve();
      },
    });
    const running = env.run(streamAssistantMessage, input(faux.getModel()));
    await within(firstUpdate.promise, 5000, "the first token");
    env.cancel();
    const failure = await within(running, 2000, "the aborted stream").then(
      () => undefined,
      (err: unknown) => err,
    );
    expect(failure).toBeInstanceOf(CancelledFailure);
    const partial = (failure as CancelledFailure).details[0] as AssistantMessage;
    expect(partial.stopReason).toBe("aborted");
    expect(textOf(partial).length).toBeGreaterThan(0);
  });

  it("asks the worker for the API key, never the input", async () => {
    const faux = fauxModel([(_context, options) => fauxAssistantMessage(`key=${options?.apiKey}`)]);
    const asked: string[] = [];
    const { streamAssistantMessage } = createActivities({
      tools: [],
      models: [faux.getModel()],
      getApiKey: (p) => (asked.push(p), "sk-from-worker"),
    });
    const message: AssistantMessage = await new MockActivityEnvironment().run(
      streamAssistantMessage,
      input(faux.getModel()),
    );
    expect(asked).toEqual([faux.getModel().provider]);
    expect(message.content[0]).toEqual({ type: "text", text: "key=sk-from-worker" });
  });

  it("throws a retryable failure for a transient error and returns a permanent one as data", async () => {
    const faux = fauxModel([
      fauxAssistantMessage([], { stopReason: "error", errorMessage: "socket hang up" }),
      fauxAssistantMessage([], { stopReason: "error", errorMessage: "model not found" }),
    ]);
    const { streamAssistantMessage } = createActivities({ tools: [] });
    await expect(
      new MockActivityEnvironment().run(streamAssistantMessage, input(faux.getModel())),
    ).rejects.toMatchObject({
      type: "ModelStreamInterrupted",
      nonRetryable: false,
    });
    const permanent = await new MockActivityEnvironment().run(streamAssistantMessage, input(faux.getModel()));
    expect(permanent).toMatchObject({ stopReason: "error", errorMessage: "model not found" });
  });
});

describe("resolveRunSetup", () => {
  it("resolves a catalogue model by 'provider/modelId' and keeps a custom Model object at an allowed base URL as given", async () => {
    const { resolveRunSetup } = createActivities({ tools: [], allowedModelBaseUrls: ["http://127.0.0.1:1/v1/"] });
    const env = new MockActivityEnvironment();
    const setup = (await env.run(resolveRunSetup, { model: "anthropic/claude-sonnet-4-5" })) as { model: Model<Api> };
    expect(setup.model).toMatchObject({ provider: "anthropic", id: "claude-sonnet-4-5", api: "anthropic-messages" });
    expect(setup.model.contextWindow).toBeGreaterThan(0);
    const custom = {
      ...setup.model,
      id: "my-vllm",
      provider: "local",
      api: "openai-completions",
      baseUrl: "http://127.0.0.1:1/v1",
    };
    expect(((await env.run(resolveRunSetup, { model: custom })) as { model: Model<Api> }).model).toEqual(custom);
    await expect(env.run(resolveRunSetup, { model: "anthropic/no-such-model" })).rejects.toMatchObject({
      type: "InvalidRunInput",
      nonRetryable: true,
    });
  });

  it("a regular setup (taken to any worker) names the worker's own queue; a local one does not", async () => {
    const { resolveRunSetup } = createActivities({ tools: [], ownTaskQueue: () => "q@host-1-abc" });
    const input = { model: "anthropic/claude-sonnet-4-5" };
    expect(await new MockActivityEnvironment({ isLocal: false }).run(resolveRunSetup, input)).toMatchObject({
      taskQueue: "q@host-1-abc",
    });
    expect(await new MockActivityEnvironment({ isLocal: true }).run(resolveRunSetup, input)).not.toHaveProperty(
      "taskQueue",
    );
    // A worker whose own-queue poller is not running names none: the first call goes to the shared queue.
    const { resolveRunSetup: stopped } = createActivities({ tools: [], ownTaskQueue: () => undefined });
    expect(await new MockActivityEnvironment({ isLocal: false }).run(stopped, input)).not.toHaveProperty("taskQueue");
  });
});

describe("executeTool", () => {
  it("stamps its output with its finish time only when the call asks (runs recorded by older workflow code replay unchanged)", async () => {
    const echo: AgentTool = {
      name: "echo",
      description: "echo",
      parameters: Type.Object({}),
      execute: async () => ({ content: [{ type: "text", text: "hi" }] }),
    };
    const { executeTool } = createActivities({ tools: [echo] });
    const call = { toolCallId: "c1", toolName: "echo", args: {} };
    const before = Date.now();
    const asked: ExecuteToolOutput = await new MockActivityEnvironment().run(executeTool, { ...call, doneAt: true });
    expect(asked.doneAtMs).toBeGreaterThanOrEqual(before);
    expect(asked.doneAtMs).toBeLessThanOrEqual(Date.now());
    const unasked: ExecuteToolOutput = await new MockActivityEnvironment().run(executeTool, call);
    expect(unasked).not.toHaveProperty("doneAtMs");
    expect(unasked.result).toEqual(asked.result);
  });

  it("hands the tool a signal that fires on cancellation, and reports the cancellation", async () => {
    const entered = deferred();
    let sawAbort = false;
    const waiter: AgentTool = {
      name: "wait",
      description: "waits for abort",
      parameters: Type.Object({}),
      execute: (_id, _args, signal) =>
        new Promise((_, reject) => {
          entered.resolve();
          signal?.addEventListener("abort", () => {
            sawAbort = true;
            reject(new Error("aborted by signal"));
          });
        }),
    };
    const env = new MockActivityEnvironment({ heartbeatTimeoutMs: 1000 });
    const { executeTool } = createActivities({ tools: [waiter] });
    const running = env.run(executeTool, { toolCallId: "w1", toolName: "wait", args: {} });
    await within(entered.promise, 5000, "the tool to start");
    env.cancel();
    await expect(within(running, 2000, "cancellation")).rejects.toBeInstanceOf(CancelledFailure);
    expect(sawAbort).toBe(true);
  });

  it("abandons a tool that ignores its signal after the grace period", async () => {
    const entered = deferred();
    const stubborn: AgentTool = {
      name: "stubborn",
      description: "ignores abort",
      parameters: Type.Object({}),
      cancelGracePeriodMs: 300,
      execute: () => {
        entered.resolve();
        return new Promise(() => {}); // never settles, never looks at its signal
      },
    };
    const env = new MockActivityEnvironment({ heartbeatTimeoutMs: 1000 });
    const { executeTool } = createActivities({ tools: [stubborn] });
    const running = env.run(executeTool, { toolCallId: "x1", toolName: "stubborn", args: {} });
    await within(entered.promise, 5000, "the tool to start");
    env.cancel();
    await expect(within(running, 2000, "abandonment")).rejects.toThrow(
      /ignored cancellation for 300 ms and was abandoned/,
    );
  });

  it("asks a tool's approval predicate with validated arguments", async () => {
    const seen: unknown[] = [];
    const rm: AgentTool = {
      name: "rm",
      description: "removes",
      parameters: Type.Object({ path: Type.String(), force: Type.Boolean() }),
      requiresApproval: (args: any) => (seen.push(args), args.force === true),
      execute: async () => ({ content: [] }),
    };
    const { prepareToolCall } = createActivities({ tools: [rm] });
    const env = new MockActivityEnvironment();
    expect(
      await env.run(prepareToolCall, { toolCallId: "a", toolName: "rm", args: { path: "x", force: "true" } }),
    ).toEqual({ needsApproval: true });
    expect(
      await env.run(prepareToolCall, { toolCallId: "b", toolName: "rm", args: { path: "x", force: false } }),
    ).toEqual({ needsApproval: false });
    expect(seen[0]).toEqual({ path: "x", force: true }); // coerced before the predicate saw it
    expect(await env.run(prepareToolCall, { toolCallId: "c", toolName: "rm", args: { path: 1 } })).toMatchObject({
      needsApproval: false,
      error: expect.stringMatching(/force/),
    });
  });

  it("heartbeats while a tool runs", async () => {
    const release = deferred();
    const slow: AgentTool = {
      name: "slow",
      description: "slow",
      parameters: Type.Object({}),
      async execute() {
        await release.promise;
        return { content: [{ type: "text", text: "ok" }] };
      },
    };
    const env = new MockActivityEnvironment({ heartbeatTimeoutMs: 300 });
    const beats = deferred();
    let heartbeats = 0;
    env.on("heartbeat", () => {
      if (++heartbeats >= 3) beats.resolve();
    });
    const { executeTool } = createActivities({ tools: [slow] });
    const running = env.run(executeTool, { toolCallId: "s1", toolName: "slow", args: {} });
    await within(beats.promise, 5000, "three heartbeats");
    release.resolve();
    expect(((await running) as { isError: boolean }).isError).toBe(false);
  });

  it("refuses two tools with one name", () => {
    const t = { name: "x", description: "", parameters: Type.Object({}), execute: async () => ({ content: [] }) };
    expect(() => createActivities({ tools: [t, t] })).toThrow(/Two tools are named "x"/);
  });

  it("keeps the tool-call id and coerced args through to execute", async () => {
    const seen: unknown[] = [];
    const tool: AgentTool = {
      name: "n",
      description: "",
      parameters: Type.Object({ n: Type.Integer() }),
      async execute(id, args) {
        seen.push([id, args]);
        return { content: [] };
      },
    };
    const { executeTool } = createActivities({ tools: [tool] });
    const call = fauxToolCall("n", { n: "42" }, { id: "c9" });
    await new MockActivityEnvironment().run(executeTool, {
      toolCallId: call.id,
      toolName: call.name,
      args: call.arguments,
    });
    expect(seen).toEqual([["c9", { n: 42 }]]);
  });
});
