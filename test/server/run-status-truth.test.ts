/**
 * What a run says about itself is true: a tool call waiting for approval has not started (`started` means its
 * execution started), and a run refused before its loop shows AgentStatus "failed" to operators searching by it.
 * Real server (its namespace has the agent search attributes), faux model.
 */
import { describe, expect, it } from "@jest/globals";
import { fauxAssistantMessage, fauxToolCall, Type } from "@jai/ai";
import { defineSearchAttributeKey } from "@temporalio/common";
import { startAgentRun } from "../../src/client/client.js";
import type { AgentRunState, AgentTool } from "../../src/shared/contracts.js";
import { AGENT_RUN_WORKFLOW } from "../../src/shared/definitions.js";
import { FailureType } from "../../src/shared/failure-types.js";
import { deferred, fauxModel, outcome, testWorker, textOf, uniqueId, within, withServer } from "../support/helpers.js";

const env = withServer();

const AgentStatus = defineSearchAttributeKey("AgentStatus", "KEYWORD");

/** Asks `state()` until `wanted` holds (bounded; the run gets there on its own). */
async function stateUntil(
  read: () => Promise<AgentRunState>,
  wanted: (s: AgentRunState) => boolean,
): Promise<AgentRunState> {
  const deadline = Date.now() + 20000;
  for (;;) {
    const state = await read();
    if (wanted(state) || Date.now() > deadline) return state;
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("state(): started means the tool's execution started", () => {
  it("a call waiting for approval reports started: false and waitingForApproval; once approved and running, started: true", async () => {
    const entered = deferred();
    const release = deferred();
    const tool: AgentTool = {
      name: "delete_all",
      description: "Deletes everything",
      parameters: Type.Object({ path: Type.String() }),
      requiresApproval: true,
      async execute(_id, args: any) {
        entered.resolve();
        await within(release.promise, 60000, "release");
        return { content: [{ type: "text", text: `deleted ${args.path}` }] };
      },
    };
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("delete_all", { path: "/tmp/x" }, { id: "del-1" })], {
        stopReason: "toolUse",
      }),
      fauxAssistantMessage("finished"),
    ]);
    const { worker, taskQueue } = await testWorker(env, [tool]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("approval-started"),
      model: faux.getModel(),
      prompt: "clean up",
    });
    const result = await worker.runUntil(async () => {
      const waiting = await stateUntil(
        () => handle.state(),
        (s) => s.status === "waiting_for_approval",
      );
      expect(waiting.status).toBe("waiting_for_approval");
      expect(waiting.pendingApprovals.map((a) => a.toolCallId)).toEqual(["del-1"]);
      expect(waiting.pendingToolCalls).toEqual([
        {
          toolCallId: "del-1",
          toolName: "delete_all",
          args: { path: "/tmp/x" },
          started: false,
          waitingForApproval: true,
        },
      ]);

      await handle.approve("del-1");
      await within(entered.promise, 20000, "the tool to start");
      const running = await handle.state();
      expect(running.status).toBe("running");
      expect(running.pendingToolCalls).toEqual([
        { toolCallId: "del-1", toolName: "delete_all", args: { path: "/tmp/x" }, started: true },
      ]);
      release.resolve();
      return handle.result();
    });
    expect(textOf(result.messages[2])).toBe("deleted /tmp/x");
  });
});

describe("a run refused before its loop shows AgentStatus failed", () => {
  it("refused at input validation (started without the client's checks)", async () => {
    const { worker, taskQueue } = await testWorker(env, []);
    const workflowId = uniqueId("refused-input");
    const failure = await worker.runUntil(async () => {
      const run = await env.client.workflow.start(AGENT_RUN_WORKFLOW, {
        taskQueue,
        workflowId,
        args: [{ model: "faux/none", prompt: "hi", maxTurns: 0 }],
      });
      return outcome(run.result());
    });
    expect(failure).toMatchObject({ type: FailureType.InvalidRunInput });
    const description = await env.client.workflow.getHandle(workflowId).describe();
    expect(description.status.name).toBe("FAILED");
    expect(description.typedSearchAttributes.get(AgentStatus)).toBe("failed");
  });

  it("refused by its setup (a tool the worker does not have)", async () => {
    const faux = fauxModel([fauxAssistantMessage("never")]);
    const { worker, taskQueue } = await testWorker(env, []);
    const workflowId = uniqueId("refused-setup");
    const failure = await worker.runUntil(async () => {
      const run = await env.client.workflow.start(AGENT_RUN_WORKFLOW, {
        taskQueue,
        workflowId,
        args: [{ model: faux.getModel(), prompt: "hi", tools: ["no_such_tool"] }],
      });
      return outcome(run.result());
    });
    expect(failure).toMatchObject({ type: FailureType.InvalidRunInput });
    const description = await env.client.workflow.getHandle(workflowId).describe();
    expect(description.typedSearchAttributes.get(AgentStatus)).toBe("failed");
  });
});
