/** Sub-agents as child workflows: parallel children, usage, events, cancellation. Real server, faux models. */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { fauxAssistantMessage, fauxToolCall, Type, type Context } from "@jai/ai";
import { getAgentRun, startAgentRun } from "../src/client.js";
import { agentTool } from "../src/subagents/agent-tool.js";
import type { AgentRunResult, AgentTool, AgentRunRef, AgentEvent } from "../src/types.js";
import { addUsage, emptyUsage } from "../src/common/usage.js";
import { deferred, fauxModel, openTestEnv, testWorker, textOf, uniqueId, within, type TestEnv } from "./helpers.js";

let env: TestEnv;
beforeAll(async () => {
  env = await openTestEnv();
});
afterAll(async () => {
  await env?.close();
});

const userText = (context: Context) => {
  const first = context.messages.find((m) => m.role === "user");
  return typeof first?.content === "string" ? first.content : textOf(first);
};

function setup(childResponses: Parameters<typeof fauxModel>[0], childTools: string[] = []) {
  const child = fauxModel(childResponses);
  const researcher = agentTool({
    name: "researcher",
    description: "Researches a topic",
    model: child.getModel(),
    systemPrompt: "You research.",
    tools: childTools,
    maxTurns: 3,
  });
  const parent = fauxModel([
    fauxAssistantMessage(
      [
        fauxToolCall("researcher", { prompt: "topic A" }, { id: "a" }),
        fauxToolCall("researcher", { prompt: "topic B" }, { id: "b" }),
      ],
      { stopReason: "toolUse" },
    ),
    fauxAssistantMessage("summary of both"),
  ]);
  return { researcher, parent };
}

describe("sub-agents", () => {
  it("two parallel sub-agents complete: answers as results, usage added, events marked with the child's id", async () => {
    const answer = (context: Context) => fauxAssistantMessage(`findings on ${userText(context)}`);
    const { researcher, parent } = setup([answer, answer]);
    const seen: { event: AgentEvent; run: AgentRunRef }[] = [];
    const { worker, taskQueue } = await testWorker(env, [researcher], {
      onEvent: (event, run) => void seen.push({ event, run }),
    });
    const workflowId = uniqueId("parent");
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId,
      model: parent.getModel(),
      prompt: "research A and B",
      tools: ["researcher"],
    });
    const result = await worker.runUntil(handle.result());
    expect(result.stopReason).toBe("stop");
    const results = result.messages.filter((m) => m.role === "toolResult");
    expect(results.map((m) => [m.isError, textOf(m)])).toEqual([
      [false, "findings on topic A"],
      [false, "findings on topic B"],
    ]);
    const ids = [`${workflowId}/sub-1-0`, `${workflowId}/sub-1-1`];
    const children = await Promise.all(ids.map((id) => env.client.workflow.getHandle(id)));
    const childResults = (await Promise.all(children.map((c) => c.result()))) as AgentRunResult[];
    const descriptions = await Promise.all(children.map((c) => c.describe()));
    // Children of the parent in Temporal's view (the UI nests them under it).
    for (const d of descriptions) expect(d.parentExecution?.workflowId).toBe(workflowId);
    // In parallel: each started before the other closed.
    expect(descriptions[0].startTime.getTime()).toBeLessThan(descriptions[1].closeTime!.getTime());
    expect(descriptions[1].startTime.getTime()).toBeLessThan(descriptions[0].closeTime!.getTime());
    const own = result.messages.reduce((u, m) => (m.role === "assistant" ? addUsage(u, m.usage) : u), emptyUsage());
    const expected = childResults.reduce((u, r) => addUsage(u, r.usage), own);
    expect(childResults.every((r) => r.usage.totalTokens > 0)).toBe(true);
    expect(result.usage.totalTokens).toBe(expected.totalTokens);
    for (const id of ids) {
      const mine = seen.filter((s) => s.run.workflowId === id).map((s) => s.event.type);
      expect(mine[0]).toBe("agent_start");
      expect(mine.at(-1)).toBe("agent_end");
    }
  });

  it("cancelling the parent mid-way cancels both children", async () => {
    const started: string[] = [];
    const bothStarted = deferred();
    const block: AgentTool = {
      name: "block",
      description: "Blocks until cancelled",
      parameters: Type.Object({}),
      execute: (id, _args, signal) =>
        new Promise((_, reject) => {
          started.push(id);
          if (started.length === 2) bothStarted.resolve();
          signal?.addEventListener("abort", () => reject(new Error("cancelled")), { once: true });
        }),
    };
    let n = 0;
    const callBlock = () =>
      fauxAssistantMessage([fauxToolCall("block", {}, { id: `blk-${n++}` })], { stopReason: "toolUse" });
    const { researcher, parent } = setup([callBlock, callBlock], ["block"]);
    const { worker, taskQueue } = await testWorker(env, [researcher, block]);
    const workflowId = uniqueId("parent");
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId,
      model: parent.getModel(),
      prompt: "research",
      tools: ["researcher"],
    });
    const { result, children } = await worker.runUntil(async () => {
      await within(bothStarted.promise, 30_000, "both children to be running their tool");
      await handle.cancel();
      const result = await within(handle.result(), 30_000, "the parent to end");
      const children = await Promise.all(
        [0, 1].map(async (i) => {
          const child = env.client.workflow.getHandle(`${workflowId}/sub-1-${i}`);
          const status = (await child.describe()).status.name;
          const outcome = status === "COMPLETED" ? ((await child.result()) as AgentRunResult).stopReason : status;
          return { status, outcome };
        }),
      );
      return { result, children };
    });
    expect(result.stopReason).toBe("aborted");
    // A cancelled agent run closes its transcript and ends "aborted" (or CANCELED where runs report cancellation as status).
    for (const child of children) expect(["aborted", "CANCELLED"]).toContain(child.outcome);
    const results = result.messages.filter((m) => m.role === "toolResult");
    expect(results).toHaveLength(2);
    expect(results.every((m) => m.isError)).toBe(true);
  });

  it("a tool call waiting for approval inside a child is approved through the child's handle", async () => {
    let ran = 0;
    const guarded: AgentTool = {
      name: "guarded",
      description: "Needs approval",
      parameters: Type.Object({}),
      requiresApproval: true,
      async execute() {
        ran++;
        return { content: [{ type: "text", text: "guarded ran" }] };
      },
    };
    const child = fauxModel([
      fauxAssistantMessage([fauxToolCall("guarded", {}, { id: "g1" })], { stopReason: "toolUse" }),
      (context: Context) => fauxAssistantMessage(`child saw: ${textOf(context.messages.at(-1))}`),
    ]);
    const researcher = agentTool({
      name: "researcher",
      description: "Researches",
      model: child.getModel(),
      tools: ["guarded"],
    });
    const parent = fauxModel([
      fauxAssistantMessage([fauxToolCall("researcher", { prompt: "go" })], { stopReason: "toolUse" }),
      fauxAssistantMessage("parent done"),
    ]);
    const waiting = deferred();
    const { worker, taskQueue } = await testWorker(env, [researcher, guarded], {
      onEvent: (event, run) => {
        if (
          event.type === "tool_execution_start" &&
          event.toolName === "guarded" &&
          run.workflowId.endsWith("/sub-1-0")
        )
          waiting.resolve();
      },
    });
    const workflowId = uniqueId("parent");
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId,
      model: parent.getModel(),
      prompt: "go",
      tools: ["researcher"],
    });
    const result = await worker.runUntil(async () => {
      await within(waiting.promise, 30_000, "the child's call to wait for approval");
      const childHandle = getAgentRun(env.client, `${workflowId}/sub-1-0`);
      expect((await childHandle.state()).pendingApprovals.map((p) => p.toolCallId)).toEqual(["g1"]);
      await childHandle.approve("g1");
      return handle.result();
    });
    expect(ran).toBe(1);
    expect(textOf(result.messages.find((m) => m.role === "toolResult"))).toBe("child saw: guarded ran");
  });
});
