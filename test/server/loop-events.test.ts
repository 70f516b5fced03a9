/** Event order, transcript shape, onUpdate and `details` on a real server with the faux model. */
import { describe, expect, it } from "@jest/globals";
import { fauxAssistantMessage, fauxText, fauxToolCall, Type, type Context } from "@jai/ai";
import { startAgentRun } from "../../src/client/client.js";
import type { AgentEvent, AgentTool } from "../../src/shared/contracts.js";
import { ABORTED_BY_CANCEL } from "../../src/workflows/tool-calls.js";
import {
  deferred,
  eventTrace,
  fauxModel,
  testWorker,
  textOf,
  toolEventProblems,
  uniqueId,
  within,
  withServer,
} from "../support/helpers.js";

const env = withServer();

const echo: AgentTool = {
  name: "echo",
  description: "Echo the text back",
  parameters: Type.Object({ text: Type.String() }),
  async execute(_id, args: any) {
    return {
      content: [{ type: "text", text: `echo: ${args.text}` }],
      details: { secret: "DETAILS-ONLY-FOR-UI", length: args.text.length },
    };
  },
};

describe("events", () => {
  it("emits the exact event order of a text-only run", async () => {
    const faux = fauxModel([fauxAssistantMessage("Hello there")]);
    const { worker, taskQueue, events } = await testWorker(env, []);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("wf"),
      model: faux.getModel(),
      prompt: "Hi",
    });
    const result = await worker.runUntil(handle.result());
    expect(result.stopReason).toBe("stop");
    expect(result.turns).toBe(1);
    expect(eventTrace(events)).toEqual([
      "agent_start",
      "turn_start",
      "message_start:user",
      "message_end:user",
      "message_start:assistant",
      "message_update",
      "message_end:assistant",
      "turn_end",
      "agent_end",
    ]);
    const deltas = events.filter((e) => e.type === "message_update" && e.assistantEvent.type === "text_delta");
    expect(
      deltas
        .map((e) =>
          e.type === "message_update" && e.assistantEvent.type === "text_delta" ? e.assistantEvent.delta : "",
        )
        .join(""),
    ).toBe("Hello there");
    const end = events.at(-1);
    expect(end?.type === "agent_end" ? end.messages.map((m) => m.role) : []).toEqual(["user", "assistant"]);
  });

  it("emits the exact event order of a tool run, with tool updates between start and end", async () => {
    let lateCallMade = false;
    const progress: AgentTool = {
      name: "progress",
      description: "Reports progress",
      parameters: Type.Object({}),
      async execute(_id, _args, _signal, onUpdate) {
        onUpdate?.({ content: [{ type: "text", text: "25%" }] });
        onUpdate?.({ content: [{ type: "text", text: "75%" }] });
        setImmediate(() => {
          onUpdate?.({ content: [{ type: "text", text: "too late" }] });
          lateCallMade = true;
        });
        return { content: [{ type: "text", text: "done" }] };
      },
    };
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("progress", {}, { id: "p1" })], { stopReason: "toolUse" }),
      fauxAssistantMessage("All done"),
    ]);
    const { worker, taskQueue, events } = await testWorker(env, [progress]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("wf"),
      model: faux.getModel(),
      prompt: "Go",
    });
    const result = await worker.runUntil(handle.result());
    expect(result.stopReason).toBe("stop");
    expect(lateCallMade).toBe(true);
    expect(eventTrace(events)).toEqual([
      "agent_start",
      "turn_start",
      "message_start:user",
      "message_end:user",
      "message_start:assistant",
      "message_update",
      "message_end:assistant",
      "tool_execution_start:progress",
      "tool_execution_update:progress",
      "tool_execution_update:progress",
      "tool_execution_end:progress",
      "message_start:toolResult",
      "message_end:toolResult",
      "turn_end",
      "turn_start",
      "message_start:assistant",
      "message_update",
      "message_end:assistant",
      "turn_end",
      "agent_end",
    ]);
    const updates = events.filter((e) => e.type === "tool_execution_update");
    expect(updates.map((e) => (e.type === "tool_execution_update" ? textOf(e.partial) : ""))).toEqual(["25%", "75%"]);
    const turnEnds = events.filter((e) => e.type === "turn_end");
    expect(turnEnds[0].type === "turn_end" && turnEnds[0].toolResults.map((r) => r.toolCallId)).toEqual(["p1"]);
  });
});

describe("transcript", () => {
  it("has the shape user, assistant(toolCall), toolResult, assistant; details stay out of the model's context", async () => {
    const contexts: Context[] = [];
    const faux = fauxModel([
      (context) => {
        contexts.push(structuredClone(context));
        return fauxAssistantMessage([fauxText("Echoing"), fauxToolCall("echo", { text: "ping" }, { id: "c1" })], {
          stopReason: "toolUse",
        });
      },
      (context) => {
        contexts.push(structuredClone(context));
        return fauxAssistantMessage("pong");
      },
    ]);
    const { worker, taskQueue } = await testWorker(env, [echo]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("wf"),
      model: faux.getModel(),
      systemPrompt: "You echo.",
      prompt: "Echo ping",
    });
    const result = await worker.runUntil(handle.result());
    const [user, call, toolResult, answer] = result.messages;
    expect(result.messages).toHaveLength(4);
    expect(user).toMatchObject({ role: "user", content: "Echo ping" });
    expect(call).toMatchObject({ role: "assistant", stopReason: "toolUse" });
    expect(call.role === "assistant" && call.content.map((c) => c.type)).toEqual(["text", "toolCall"]);
    expect(toolResult).toMatchObject({
      role: "toolResult",
      toolCallId: "c1",
      toolName: "echo",
      isError: false,
      content: [{ type: "text", text: "echo: ping" }],
    });
    // The transcript keeps details for logs and UI...
    expect(toolResult.role === "toolResult" && toolResult.details).toEqual({
      secret: "DETAILS-ONLY-FOR-UI",
      length: 4,
    });
    expect(answer).toMatchObject({ role: "assistant", stopReason: "stop" });
    expect(result.usage.totalTokens).toBeGreaterThan(0);
    // ...but the model never sees them.
    expect(contexts).toHaveLength(2);
    expect(contexts[1].systemPrompt).toBe("You echo.");
    expect(contexts[1].messages.map((m) => m.role)).toEqual(["user", "assistant", "toolResult"]);
    expect(JSON.stringify(contexts[1])).not.toContain("DETAILS-ONLY-FOR-UI");
    expect(contexts[1].messages[2]).not.toHaveProperty("details");
    expect(contexts[0].tools?.map((t) => t.name)).toEqual(["echo"]);
    expect(await handle.transcript()).toEqual(result.messages);
  });

  it("continues from a list of messages without repeating them in the result", async () => {
    const faux = fauxModel([(context) => fauxAssistantMessage(`I see ${context.messages.length} messages`)]);
    const { worker, taskQueue, events } = await testWorker(env, []);
    const earlier = [
      { role: "user" as const, content: "first", timestamp: 1 },
      { ...fauxAssistantMessage("reply"), timestamp: 2 },
      { role: "user" as const, content: "second", timestamp: 3 },
    ];
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("wf"),
      model: faux.getModel(),
      prompt: earlier,
    });
    const result = await worker.runUntil(handle.result());
    expect(result.messages).toHaveLength(1);
    expect(textOf(result.messages[0])).toBe("I see 3 messages");
    expect((await handle.transcript()).map((m) => m.role)).toEqual(["user", "assistant", "user", "assistant"]);
    expect((await handle.transcript({ offset: 1, limit: 2 })).map((m) => m.role)).toEqual(["assistant", "user"]);
    expect(eventTrace(events).slice(0, 3)).toEqual(["agent_start", "turn_start", "message_start:assistant"]);
  });
});

describe("tool events", () => {
  /** A worker whose events also resolve `seen(match)` promises, so tools can wait for what the UI saw. */
  async function watchedWorker(tools: AgentTool<any>[]) {
    const events: AgentEvent[] = [];
    const waiters: { match: (e: AgentEvent) => boolean; resolve: () => void }[] = [];
    const w = await testWorker(env, tools, {
      onEvent: (event) => {
        events.push(event);
        for (const waiter of waiters) if (waiter.match(event)) waiter.resolve();
      },
    });
    const seen = (match: (e: AgentEvent) => boolean) => {
      const d = deferred();
      if (events.some(match)) d.resolve();
      else waiters.push({ match, resolve: d.resolve });
      return within(d.promise, 20000, "an event");
    };
    return { ...w, events, seen };
  }
  const ended = (id: string) => (e: AgentEvent) => e.type === "tool_execution_end" && e.toolCallId === id;
  const batchTrace = (events: AgentEvent[]) =>
    events.flatMap((e) =>
      e.type.startsWith("tool_execution")
        ? [`${e.type}:${(e as { toolCallId: string }).toolCallId}`]
        : (e.type === "message_start" || e.type === "message_end") && e.message.role === "toolResult"
          ? [`${e.type}:${e.message.toolCallId}`]
          : [],
    );

  it("ends each parallel call when it finishes (a slow first call holds no one back); results follow the batch in source order", async () => {
    const ui: { seen?: (match: (e: AgentEvent) => boolean) => Promise<void> } = {};
    const slow: AgentTool = {
      name: "slow",
      description: "finishes after the UI saw fast end",
      parameters: Type.Object({}),
      async execute() {
        await ui.seen!(ended("f"));
        return { content: [{ type: "text", text: "slow done" }] };
      },
    };
    const fast: AgentTool = {
      name: "fast",
      description: "fast",
      parameters: Type.Object({}),
      execute: async () => ({ content: [{ type: "text", text: "fast done" }] }),
    };
    const faux = fauxModel([
      fauxAssistantMessage(
        [
          fauxToolCall("slow", {}, { id: "s" }),
          fauxToolCall("fast", {}, { id: "f" }),
          fauxToolCall("nope", {}, { id: "n" }),
        ],
        { stopReason: "toolUse" },
      ),
      fauxAssistantMessage("done"),
    ]);
    const w = await watchedWorker([slow, fast]);
    ui.seen = w.seen;
    const handle = await startAgentRun(env.client, {
      taskQueue: w.taskQueue,
      workflowId: uniqueId("wf"),
      model: faux.getModel(),
      prompt: "Go",
    });
    const result = await w.worker.runUntil(handle.result());
    expect(result.messages.flatMap((m) => (m.role === "toolResult" ? [m.toolCallId] : []))).toEqual(["s", "f", "n"]);
    expect(batchTrace(w.events)).toEqual([
      "tool_execution_start:s",
      "tool_execution_start:f",
      "tool_execution_start:n",
      // The unknown tool ends at once, fast when it finishes, slow last.
      "tool_execution_end:n",
      "tool_execution_end:f",
      "tool_execution_end:s",
      "message_start:s",
      "message_end:s",
      "message_start:f",
      "message_end:f",
      "message_start:n",
      "message_end:n",
    ]);
    const turnEnd = w.events.find((e) => e.type === "turn_end");
    expect(turnEnd?.type === "turn_end" && turnEnd.toolResults.map((r) => r.toolCallId)).toEqual(["s", "f", "n"]);
    expect(w.events.findIndex((e) => e.type === "turn_end")).toBeGreaterThan(
      w.events.findIndex(
        (e) => e.type === "message_end" && e.message.role === "toolResult" && e.message.toolCallId === "n",
      ),
    );
    expect(toolEventProblems(w.events)).toEqual([]);
  });

  it("closes a cancelled batch cleanly: running calls end, unstarted ones get no execution events, then all results in source order", async () => {
    const hang: AgentTool = {
      name: "hang",
      description: "runs until aborted",
      parameters: Type.Object({}),
      execute: (_id, _args, signal) =>
        new Promise((_, reject) => signal?.addEventListener("abort", () => reject(new Error("aborted")))),
    };
    const quick: AgentTool = {
      name: "quick",
      description: "quick",
      parameters: Type.Object({}),
      execute: async () => ({ content: [{ type: "text", text: "quick done" }] }),
    };
    const later: AgentTool = {
      name: "later",
      description: "after the others",
      parameters: Type.Object({}),
      executionMode: "sequential",
      execute: async () => ({ content: [{ type: "text", text: "never" }] }),
    };
    const faux = fauxModel([
      fauxAssistantMessage(
        [
          fauxToolCall("quick", {}, { id: "q" }),
          fauxToolCall("hang", {}, { id: "h" }),
          fauxToolCall("later", {}, { id: "l" }),
        ],
        { stopReason: "toolUse" },
      ),
    ]);
    const w = await watchedWorker([hang, quick, later]);
    const handle = await startAgentRun(env.client, {
      taskQueue: w.taskQueue,
      workflowId: uniqueId("wf"),
      model: faux.getModel(),
      prompt: "Go",
    });
    const result = await w.worker.runUntil(async () => {
      await w.seen(ended("q"));
      await handle.cancel();
      return handle.result();
    });
    expect(result.stopReason).toBe("aborted");
    expect(result.messages.flatMap((m) => (m.role === "toolResult" ? [`${m.toolCallId}:${textOf(m)}`] : []))).toEqual([
      "q:quick done",
      `h:${ABORTED_BY_CANCEL}`,
      `l:${ABORTED_BY_CANCEL}`,
    ]);
    expect(batchTrace(w.events)).toEqual([
      "tool_execution_start:q",
      "tool_execution_start:h",
      "tool_execution_end:q",
      "tool_execution_end:h",
      "message_start:q",
      "message_end:q",
      "message_start:h",
      "message_end:h",
      "message_start:l",
      "message_end:l",
    ]);
    expect(w.events.at(-1)?.type).toBe("agent_end");
    expect(toolEventProblems(w.events)).toEqual([]);
  });
});
