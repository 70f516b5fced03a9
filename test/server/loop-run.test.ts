/** How runs end, what they report while running, and how bad input is refused. Real server, faux model. */
import { describe, expect, it } from "@jest/globals";
import { WorkflowFailedError } from "@temporalio/client";
import { ApplicationFailure, type Payload } from "@temporalio/common";
import { fauxAssistantMessage, fauxToolCall, Type } from "@jai/ai";
import { getAgentRun, InvalidRunInputError, startAgentRun } from "../../src/client/client.js";
import type { AgentTool } from "../../src/shared/contracts.js";
import { AGENT_RUN_WORKFLOW } from "../../src/shared/definitions.js";
import { deferred, fauxModel, testWorker, textOf, uniqueId, within, withServer } from "../support/helpers.js";

const env = withServer();

const noop: AgentTool = {
  name: "noop",
  description: "Does nothing",
  parameters: Type.Object({}),
  async execute() {
    return { content: [{ type: "text", text: "ok" }] };
  },
};

async function failureOf(promise: Promise<unknown>): Promise<ApplicationFailure> {
  const err = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(WorkflowFailedError);
  const cause = (err as WorkflowFailedError).cause;
  expect(cause).toBeInstanceOf(ApplicationFailure);
  return cause as ApplicationFailure;
}

describe("ending a run", () => {
  it("ends with the model's error message when the model answers stopReason error", async () => {
    const faux = fauxModel([fauxAssistantMessage([], { stopReason: "error", errorMessage: "invalid x-api-key" })]);
    const { worker, taskQueue, events } = await testWorker(env, [noop]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("wf"),
      model: faux.getModel(),
      prompt: "hi",
    });
    const result = await worker.runUntil(handle.result());
    expect(result.stopReason).toBe("error");
    expect(result.errorMessage).toBe("invalid x-api-key");
    expect(result.turns).toBe(1);
    expect(faux.state.callCount).toBe(1); // permanent: never retried
    expect(events.map((e) => e.type).slice(-3)).toEqual(["message_end", "turn_end", "agent_end"]);
    expect((await handle.state()).status).toBe("failed");
  });

  it("lets Temporal retry a transient model failure (connection reset) and goes on", async () => {
    const faux = fauxModel([
      fauxAssistantMessage([], { stopReason: "error", errorMessage: "read ECONNRESET" }),
      fauxAssistantMessage("recovered"),
    ]);
    const { worker, taskQueue } = await testWorker(env, []);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("wf"),
      model: faux.getModel(),
      prompt: "hi",
      modelActivity: { retry: { initialInterval: "50ms" } },
    });
    const result = await worker.runUntil(handle.result());
    expect(result.stopReason).toBe("stop");
    expect(textOf(result.messages.at(-1))).toBe("recovered");
    expect(faux.state.callCount).toBe(2);
    const history = await handle.workflow.fetchHistory();
    const started = history.events?.filter((e) => e.activityTaskStartedEventAttributes) ?? [];
    expect(started).toContainEqual(
      expect.objectContaining({ activityTaskStartedEventAttributes: expect.objectContaining({ attempt: 2 }) }),
    );
  });

  it("ends with max_turns after maxTurns model calls", async () => {
    const loop = () => fauxAssistantMessage([fauxToolCall("noop", {})], { stopReason: "toolUse" });
    const faux = fauxModel([loop, loop, loop, loop, loop]);
    const { worker, taskQueue } = await testWorker(env, [noop]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("wf"),
      model: faux.getModel(),
      prompt: "loop",
      maxTurns: 3,
    });
    const result = await worker.runUntil(handle.result());
    expect(result.stopReason).toBe("max_turns");
    expect(result.turns).toBe(3);
    expect(faux.state.callCount).toBe(3);
    expect(result.messages.map((m) => m.role)).toEqual(["user", ...Array(3).fill(["assistant", "toolResult"]).flat()]);
  });

  it("resolves a 'provider/modelId' string through the worker's models", async () => {
    const faux = fauxModel([fauxAssistantMessage("by name")]);
    const model = faux.getModel();
    const { worker, taskQueue } = await testWorker(env, [], { models: [model] });
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("wf"),
      model: `${model.provider}/${model.id}`,
      prompt: "hi",
    });
    const result = await worker.runUntil(handle.result());
    expect(textOf(result.messages.at(-1))).toBe("by name");
  });

  it("eagerStart through the worker's client: the first workflow task comes back in the start response", async () => {
    const faux = fauxModel([fauxAssistantMessage("eager"), fauxAssistantMessage("plain")]);
    const { worker, taskQueue } = await testWorker(env, []);
    const [eager, plain] = await worker.runUntil(async () => {
      const start = (eagerStart: boolean) =>
        startAgentRun(worker.client, {
          taskQueue,
          workflowId: uniqueId("eager"),
          model: faux.getModel(),
          prompt: "hi",
          eagerStart,
        });
      const a = await start(true);
      await a.result();
      const b = await start(false);
      await b.result();
      return [a, b];
    });
    const started = (h: typeof eager) => (h.workflow as unknown as { eagerlyStarted: boolean }).eagerlyStarted;
    expect(started(eager)).toBe(true);
    expect(started(plain)).toBe(false);
    expect(textOf((await eager.result()).messages.at(-1))).toBe("eager");
  });
});

describe("while a run is running", () => {
  it("answers state and transcript queries and keeps the UI's current details up to date", async () => {
    const entered = deferred();
    const release = deferred();
    const slow: AgentTool = {
      name: "slow",
      description: "Waits for the test",
      parameters: Type.Object({ path: Type.String() }),
      async execute() {
        entered.resolve();
        await within(release.promise, 20000, "release");
        return { content: [{ type: "text", text: "slow done" }] };
      },
    };
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("slow", { path: "a.txt" }, { id: "s1" })], { stopReason: "toolUse" }),
      fauxAssistantMessage("end"),
    ]);
    const { worker, taskQueue } = await testWorker(env, [slow]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("wf"),
      model: faux.getModel(),
      prompt: "go slow",
    });
    const result = await worker.runUntil(async () => {
      await within(entered.promise, 20000, "the tool to start");
      const state = await handle.state();
      expect(state).toMatchObject({ status: "running", phase: "running_tools", turn: 1, messageCount: 2 });
      expect(state.pendingToolCalls).toEqual([
        { toolCallId: "s1", toolName: "slow", args: { path: "a.txt" }, started: true },
      ]);
      expect(state.usage.totalTokens).toBeGreaterThan(0);
      expect((await handle.transcript()).map((m) => m.role)).toEqual(["user", "assistant"]);
      const metadata = (await handle.workflow.query("__temporal_workflow_metadata")) as { currentDetails?: string };
      expect(metadata.currentDetails).toMatch(/running.*running tools.*turn 1.*tokens/);
      release.resolve();
      return handle.result();
    });
    expect(result.stopReason).toBe("stop");
    const after = await getAgentRun(env.client, handle.workflowId).state();
    expect(after).toMatchObject({ status: "completed", stopReason: "stop", turn: 2, pendingToolCalls: [] });
  });

  it("names every activity in history: setup, turn N · provider/model, tool + args", async () => {
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("noop", { file: "src/a.ts" }, { id: "n1" })], { stopReason: "toolUse" }),
      fauxAssistantMessage("end"),
    ]);
    const model = faux.getModel();
    const { worker, taskQueue } = await testWorker(env, [
      { ...noop, parameters: Type.Object({ file: Type.String() }) },
    ]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("wf"),
      model,
      prompt: "name things",
    });
    await worker.runUntil(handle.result());
    const history = await handle.workflow.fetchHistory();
    const scheduled = (history.events ?? []).flatMap((e) => {
      const summary = e.userMetadata?.summary
        ? env.client.options.loadedDataConverter.payloadConverter.fromPayload<string>(e.userMetadata.summary as Payload)
        : undefined;
      // The setup is a local activity: a marker carrying its type and summary.
      const marker = e.markerRecordedEventAttributes;
      if (marker?.markerName === "core_local_activity") {
        const data = JSON.parse(Buffer.from(marker.details!.data!.payloads![0].data!).toString()) as {
          activity_type: string;
          activity_id: string;
        };
        return [{ type: data.activity_type, id: data.activity_id, summary }];
      }
      const attrs = e.activityTaskScheduledEventAttributes;
      if (!attrs) return [];
      return [{ type: attrs.activityType?.name, id: attrs.activityId, summary }];
    });
    expect(scheduled).toEqual([
      { type: "resolveRunSetup", id: expect.any(String), summary: `setup · ${model.provider}/${model.id}` },
      { type: "streamAssistantMessage", id: expect.any(String), summary: `turn 1 · ${model.provider}/${model.id}` },
      { type: "executeTool", id: "tool-1-0-n1", summary: "noop src/a.ts" },
      { type: "streamAssistantMessage", id: expect.any(String), summary: `turn 2 · ${model.provider}/${model.id}` },
    ]);
  });
});

describe("bad input", () => {
  it("fails the workflow at once, non-retryable, naming the field", async () => {
    const { worker, taskQueue } = await testWorker(env, []);
    const cases: [unknown, RegExp][] = [
      [{ model: "faux/x", prompt: "hi", maxTurns: 0 }, /"maxTurns" must be a positive integer/],
      [{ model: "nope", prompt: "hi" }, /"model" must be "provider\/modelId"/],
      [{ model: "faux/x", prompt: "" }, /"prompt" must not be empty/],
      [{ model: "faux/x", prompt: "hi", toolExecution: "sideways" }, /"toolExecution"/],
      [{ model: "faux/x", prompt: [{ role: "robot", content: "x" }] }, /"prompt\[0\]\.role"/],
    ];
    await worker.runUntil(async () => {
      for (const [input, pattern] of cases) {
        const handle = await env.client.workflow.start(AGENT_RUN_WORKFLOW, {
          taskQueue,
          workflowId: uniqueId("bad"),
          args: [input],
        });
        const failure = await failureOf(handle.result());
        expect(failure.message).toMatch(pattern);
        expect(failure.type).toBe("InvalidRunInput");
        expect(failure.nonRetryable).toBe(true);
        const history = await handle.fetchHistory();
        expect(history.events?.some((e) => e.activityTaskScheduledEventAttributes)).toBe(false);
      }
    });
  });

  it("fails the run naming the field when the worker does not know the model or a tool", async () => {
    const { worker, taskQueue } = await testWorker(env, [noop]);
    await worker.runUntil(async () => {
      const unknownModel = await env.client.workflow.start(AGENT_RUN_WORKFLOW, {
        taskQueue,
        workflowId: uniqueId("bad"),
        args: [{ model: "nowhere/no-model", prompt: "hi" }],
      });
      expect((await failureOf(unknownModel.result())).message).toMatch(/"model": unknown model "nowhere\/no-model"/);
      const faux = fauxModel([]);
      const unknownTool = await env.client.workflow.start(AGENT_RUN_WORKFLOW, {
        taskQueue,
        workflowId: uniqueId("bad"),
        args: [{ model: faux.getModel(), prompt: "hi", tools: ["noop", "rm_rf"] }],
      });
      const failure = await failureOf(unknownTool.result());
      expect(failure.message).toMatch(/"tools": unknown tool "rm_rf"; this worker has: noop/);
      expect(faux.state.callCount).toBe(0);
    });
  });

  it("startAgentRun refuses bad input before starting anything", async () => {
    const workflowId = uniqueId("never");
    await expect(
      startAgentRun(env.client, { workflowId, model: "faux/x", prompt: "hi", maxTurns: -1 }),
    ).rejects.toThrow(InvalidRunInputError);
    await expect(
      startAgentRun(env.client, { workflowId, model: "faux/x", prompt: "hi", maxTurns: -1 }),
    ).rejects.toThrow(/"maxTurns"/);
    await expect(env.client.workflow.getHandle(workflowId).describe()).rejects.toThrow(/not found/i);
  });
});
