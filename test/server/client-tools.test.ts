/**
 * Client-side tools (issue #41, item 2), on the real dev server: a call waits durably for a client's result,
 * answered over a second client connection after the worker that served the run was replaced; a result its
 * schema refuses is refused to the submitter while the call keeps waiting; a timeout becomes an error result;
 * steering and cancel treat the wait like any other; continue-as-new carries the tools.
 */
import { describe, expect, it } from "@jest/globals";
import { Client } from "@temporalio/client";
import { createAgentWorker } from "../../src/worker/worker.js";
import { fauxAssistantMessage, fauxToolCall, Type, type Context } from "@jai/ai";
import { getAgentRun, InvalidRunInputError, startAgentRun, type AgentRunHandle } from "../../src/client/client.js";
import type { AgentEvent, AgentTool, ClientToolDeclaration } from "../../src/shared/contracts.js";
import { ABORTED_BY_CANCEL, SKIPPED_BY_STEERING } from "../../src/workflows/tool-calls.js";
import { BASELINE_PATCH, RUN_SCHEMAS_PATCH } from "../../src/workflows/patches.js";
import {
  fauxModel,
  outcome,
  patchIds,
  rejection,
  stateWhen,
  testWorker,
  textOf,
  toolEventProblems,
  uniqueId,
  within,
  withServer,
} from "../support/helpers.js";
import { connectTestClient } from "../support/client-connection.js";

const env = withServer();

const pickColor: ClientToolDeclaration = {
  name: "pick_color",
  description: "Asks the user to pick a color",
  parameters: { type: "object", properties: { hint: { type: "string" } } },
  result: {
    type: "object",
    properties: { color: { enum: ["red", "blue"] } },
    required: ["color"],
    additionalProperties: false,
  },
};

/** The model asks for the client tool, then says what the last tool result was. */
const script = (id = "p-1") => [
  fauxAssistantMessage([fauxToolCall("pick_color", { hint: "warm" }, { id })], { stopReason: "toolUse" }),
  (context: Context) => fauxAssistantMessage(`got: ${textOf(context.messages.at(-1))}`),
];

const waitingFor = (id: string) => (s: Awaited<ReturnType<AgentRunHandle["state"]>>) =>
  (s.pendingClientResults ?? []).some((p) => p.toolCallId === id);

describe("client tools", () => {
  it("wait durably for a result submitted from another connection after a worker restart; a bad result is refused", async () => {
    const faux = fauxModel(script());
    const first = await testWorker(env, []);
    const workflowId = uniqueId("client-tool");
    const handle = await startAgentRun(env.client, {
      taskQueue: first.taskQueue,
      workflowId,
      model: faux.getModel(),
      prompt: "pick one",
      clientTools: [pickColor],
    });
    const waiting = await first.worker.runUntil(stateWhen(handle, waitingFor("p-1"), "p-1 to wait for the client"));
    // state() and the events say what waits for whom.
    expect(waiting.pendingClientResults).toEqual([
      { toolCallId: "p-1", toolName: "pick_color", args: { hint: "warm" }, since: expect.stringMatching(/^\d{4}-/) },
    ]);
    expect(waiting.pendingToolCalls).toEqual([
      expect.objectContaining({ toolCallId: "p-1", started: true, waitingForClient: true }),
    ]);
    const update = first.events.find((e) => e.type === "tool_execution_update");
    expect(update).toMatchObject({ toolCallId: "p-1", partial: { details: { waitingFor: "client" } } });
    // The first worker is gone (runUntil shut it down); the run holds no worker while it waits.

    const events: AgentEvent[] = [];
    const second = await createAgentWorker({
      connection: env.connection,
      taskQueue: first.taskQueue,
      tools: [],
      workflowBundle: env.bundle,
      onEvent: (e) => void events.push(e),
    });
    const connection = await connectTestClient(process.env.TEMPORAL_ADDRESS!);
    try {
      const other = getAgentRun(new Client({ connection }), workflowId);
      const result = await second.runUntil(async () => {
        expect(await rejection(other.submitToolResult("p-1", { color: "green" }))).toContain(
          `submitToolResult rejected: Invalid result for pick_color: "result.color" must be one of "red", "blue"`,
        );
        expect(await rejection(other.submitToolResult("nope", { color: "red" }))).toContain(
          `No client tool call "nope" is waiting for a result; waiting: p-1`,
        );
        expect((await other.state()).pendingClientResults?.map((p) => p.toolCallId)).toEqual(["p-1"]);
        await other.submitToolResult("p-1", { color: "red" });
        return within(other.result(), 20_000, "the run");
      });
      expect(result.stopReason).toBe("stop");
      const toolResult = result.messages.find((m) => m.role === "toolResult");
      expect(toolResult).toMatchObject({ toolCallId: "p-1", isError: false, details: { result: { color: "red" } } });
      expect(textOf(result.messages.at(-1))).toBe(`got: {"color":"red"}`);
    } finally {
      await connection.close();
    }
    const history = await handle.workflow.fetchHistory();
    // Only the accepted result entered history; no tool activity ran for the call.
    const accepted = history.events?.filter((e) => e.workflowExecutionUpdateAcceptedEventAttributes) ?? [];
    expect(accepted).toHaveLength(1);
    expect(
      history.events?.some((e) => e.activityTaskScheduledEventAttributes?.activityType?.name === "executeTool"),
    ).toBe(false);
    // Client tools are covered by the baseline; their schemas by RUN_SCHEMAS_PATCH, asked before the first command.
    expect(patchIds(history.events)).toEqual([BASELINE_PATCH, RUN_SCHEMAS_PATCH]);
    expect(toolEventProblems([...first.events, ...events])).toEqual([]);
  });

  it("a timeout turns silence into an error result the model sees", async () => {
    const faux = fauxModel(script());
    const { worker, taskQueue } = await testWorker(env, []);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("client-timeout"),
      model: faux.getModel(),
      prompt: "pick one",
      clientTools: [{ ...pickColor, timeout: "1s" }],
    });
    const result = await worker.runUntil(within(handle.result(), 20_000, "the run"));
    expect(result.messages.find((m) => m.role === "toolResult")).toMatchObject({ isError: true });
    expect(textOf(result.messages.at(-1))).toBe("got: Tool pick_color: no result from the client within 1s.");
    expect(result.stopReason).toBe("stop");
  });

  it("steering skips a waiting call; cancel aborts it", async () => {
    const faux = fauxModel([...script("s-1"), ...script("c-1")]);
    const { worker, taskQueue } = await testWorker(env, []);
    await worker.runUntil(async () => {
      const steered = await startAgentRun(env.client, {
        taskQueue,
        workflowId: uniqueId("client-steer"),
        model: faux.getModel(),
        prompt: "pick one",
        clientTools: [pickColor],
      });
      await stateWhen(steered, waitingFor("s-1"), "s-1 to wait for the client");
      await steered.steer("never mind");
      const r1 = await within(steered.result(), 20_000, "the steered run");
      expect(textOf(r1.messages.find((m) => m.role === "toolResult"))).toBe(SKIPPED_BY_STEERING);

      const cancelled = await startAgentRun(env.client, {
        taskQueue,
        workflowId: uniqueId("client-cancel"),
        model: faux.getModel(),
        prompt: "pick one",
        clientTools: [pickColor],
      });
      await stateWhen(cancelled, waitingFor("c-1"), "c-1 to wait for the client");
      await cancelled.cancel();
      const r2 = await within(cancelled.result(), 20_000, "the cancelled run");
      expect(r2.stopReason).toBe("aborted");
      expect(textOf(r2.messages.find((m) => m.role === "toolResult"))).toBe(ABORTED_BY_CANCEL);
    });
  });

  it("continue-as-new carries the client tools, and policies apply to them", async () => {
    const echo: AgentTool = {
      name: "echo",
      description: "echo",
      parameters: Type.Object({}),
      execute: async () => ({ content: [{ type: "text", text: "echoed" }] }),
    };
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("echo", {}, { id: "e-1" })], { stopReason: "toolUse" }),
      ...script("n-1"),
    ]);
    const { worker, taskQueue } = await testWorker(env, [echo]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("client-can"),
      model: faux.getModel(),
      prompt: "pick one",
      clientTools: [pickColor],
      continueAsNew: { afterTurns: 1 },
      approvalPolicy: { rules: [{ match: "pick_*", action: "ask" }] },
    });
    const result = await worker.runUntil(async () => {
      // The call is in the second run of the chain, and asks a person first (the policy's "ask" rule).
      const asking = await stateWhen(
        handle,
        (s) => s.pendingApprovals.some((a) => a.toolCallId === "n-1"),
        "n-1 to ask",
      );
      expect(asking.previousRunId).toBeDefined();
      await handle.approve("n-1");
      await stateWhen(handle, waitingFor("n-1"), "n-1 to wait for the client");
      await handle.submitToolResult("n-1", "not an object, but an error needs no schema", { isError: true });
      return within(handle.result(), 20_000, "the run");
    });
    expect(result.messages.find((m) => m.role === "toolResult" && m.toolCallId === "n-1")).toMatchObject({
      isError: true,
      content: [{ type: "text", text: "not an object, but an error needs no schema" }],
    });
  });

  it("refuses bad declarations at start, and a client tool named like a worker tool", async () => {
    const faux = fauxModel([fauxAssistantMessage("unused")]);
    const echo: AgentTool = {
      name: "echo",
      description: "echo",
      parameters: Type.Object({}),
      execute: async () => ({ content: [{ type: "text", text: "echoed" }] }),
    };
    const { worker, taskQueue } = await testWorker(env, [echo]);
    await expect(
      startAgentRun(env.client, {
        taskQueue,
        model: faux.getModel(),
        prompt: "go",
        clientTools: [{ ...pickColor, timeout: "soon" }],
      }),
    ).rejects.toThrow(
      new InvalidRunInputError(
        `Invalid run input: "clientTools[0].timeout" is not a duration: "soon" (use milliseconds, or a string like "30s")`,
      ),
    );
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("client-clash"),
      model: faux.getModel(),
      prompt: "go",
      clientTools: [{ ...pickColor, name: "echo" }],
    });
    const failure = await worker.runUntil(outcome(handle.result()));
    expect(failure).toMatchObject({
      type: "InvalidRunInput",
      message: `Invalid run input: "clientTools": "echo" is the name of a worker tool; a client tool needs a name of its own`,
    });
  });
});
