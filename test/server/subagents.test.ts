/** Sub-agents as child workflows: parallel children, usage, events, cancellation. Real server, faux models. */
import { describe, expect, it } from "@jest/globals";
import { fauxAssistantMessage, fauxToolCall, Type, type Context } from "@jai/ai";
import { getAgentRun, startAgentRun } from "../../src/client/client.js";
import { agentTool } from "../../src/worker/subagents/agent-tool.js";
import type { AgentRunResult, AgentTool, AgentRunRef, AgentEvent } from "../../src/shared/contracts.js";
import { addUsage, emptyUsage } from "../../src/shared/usage.js";
import { deferred, fauxModel, testWorker, textOf, uniqueId, within, withServer } from "../support/helpers.js";

const env = withServer();

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
    // In parallel, as the parent's history records it: both started before either ended.
    const parentEvents = (await handle.workflow.fetchHistory()).events ?? [];
    const at = (has: (e: (typeof parentEvents)[number]) => unknown) =>
      parentEvents.flatMap((e, i) => (has(e) ? [i] : []));
    const initiated = at((e) => e.startChildWorkflowExecutionInitiatedEventAttributes);
    const closed = at((e) => e.childWorkflowExecutionCompletedEventAttributes);
    expect([initiated.length, closed.length]).toEqual([2, 2]);
    expect(Math.max(...initiated)).toBeLessThan(Math.min(...closed));
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

  describe("depth bound", () => {
    /** The tree's workflow ids are deterministic: the k-th call of turn t of run R is `R/sub-t-k`. */
    const below = (id: string, path: number[]) => path.reduce((at, k) => `${at}/sub-1-${k}`, id);
    const status = async (id: string) => {
      try {
        return (await env.client.workflow.getHandle(id).describe()).status.name;
      } catch (err) {
        if ((err as Error).name === "WorkflowNotFoundError") return "NOT_FOUND";
        throw err;
      }
    };
    /** The depth the run's recorded input says it is at (absent in a top-level run). */
    const recordedDepth = async (id: string) => {
      const history = await env.client.workflow.getHandle(id).fetchHistory();
      const data = history.events?.[0]?.workflowExecutionStartedEventAttributes?.input?.payloads?.[0]?.data;
      return (JSON.parse(Buffer.from(data!).toString()) as { subAgentDepth?: number }).subAgentDepth;
    };
    /** A model that always delegates (`calls` parallel calls), then reports what its results said. */
    const alwaysDelegates = (
      calls: number,
      onRefused: (context: Context) => ReturnType<typeof fauxAssistantMessage>,
    ) => {
      const step = (context: Context) => {
        const last = context.messages.at(-1);
        if (last?.role === "toolResult" && last.isError && /was not started/.test(textOf(last)))
          return onRefused(context);
        if (last?.role === "toolResult") return fauxAssistantMessage(`delegated: ${textOf(last)}`);
        return fauxAssistantMessage(
          Array.from({ length: calls }, (_, i) => fauxToolCall("delegate", { prompt: "go deeper" }, { id: `d${i}` })),
          { stopReason: "toolUse" },
        );
      };
      return fauxModel(Array.from({ length: 200 }, () => step));
    };

    it("a model that always delegates stops at maxDepth: the deepest calls get an error result, the run completes", async () => {
      const faux = alwaysDelegates(2, (context) => fauxAssistantMessage(`refused: ${textOf(context.messages.at(-1))}`));
      const delegate = agentTool({
        name: "delegate",
        description: "Delegates",
        model: faux.getModel(),
        tools: ["delegate"],
        maxDepth: 2,
      });
      const { worker, taskQueue } = await testWorker(env, [delegate]);
      const workflowId = uniqueId("deep");
      const handle = await startAgentRun(env.client, {
        taskQueue,
        workflowId,
        model: faux.getModel(),
        prompt: "go",
        tools: ["delegate"],
      });
      const result = await worker.runUntil(within(handle.result(), 60_000, "the tree to finish"));
      expect(result.stopReason).toBe("stop");
      const depth1 = [[0], [1]];
      const depth2 = depth1.flatMap((p) => [0, 1].map((k) => [...p, k]));
      const depth3 = depth2.flatMap((p) => [0, 1].map((k) => [...p, k]));
      for (const p of [...depth1, ...depth2]) expect(await status(below(workflowId, p))).toBe("COMPLETED");
      // Nothing below depth 2: 1 + 2 + 4 workflows in the tree.
      for (const p of depth3) expect(await status(below(workflowId, p))).toBe("NOT_FOUND");
      expect(await recordedDepth(workflowId)).toBeUndefined();
      expect(await recordedDepth(below(workflowId, [1]))).toBe(1);
      expect(await recordedDepth(below(workflowId, [1, 0]))).toBe(2);
      // The deepest runs' calls came back as error results the model saw; their runs completed normally.
      for (const p of depth2) {
        const deepest = (await env.client.workflow.getHandle(below(workflowId, p)).result()) as AgentRunResult;
        expect(deepest.stopReason).toBe("stop");
        const refused = deepest.messages.filter((m) => m.role === "toolResult");
        expect(refused).toHaveLength(2);
        for (const m of refused) {
          expect(m.isError).toBe(true);
          expect(textOf(m)).toMatch(
            /was not started: this run is already at sub-agent depth 2 and delegate allows at most 2/,
          );
        }
        expect(textOf(deepest.messages.at(-1))).toMatch(/^refused: Sub-agent delegate was not started/);
      }
      // One level up the results are the children's answers.
      const middle = (await env.client.workflow.getHandle(below(workflowId, [0])).result()) as AgentRunResult;
      expect(middle.messages.filter((m) => m.role === "toolResult").map((m) => m.isError)).toEqual([false, false]);
    });

    it("stops at the default depth 3; cancelling the root cancels the whole tree", async () => {
      const faux = alwaysDelegates(1, () =>
        fauxAssistantMessage([fauxToolCall("block", {}, { id: "blk" })], { stopReason: "toolUse" }),
      );
      const delegate = agentTool({
        name: "delegate",
        description: "Delegates",
        model: faux.getModel(),
        tools: ["delegate", "block"],
      });
      const blocked = deferred<string>();
      const block: AgentTool = {
        name: "block",
        description: "Blocks until cancelled",
        parameters: Type.Object({}),
        execute: (_id, _args, signal) =>
          new Promise((_, reject) =>
            signal?.addEventListener("abort", () => reject(new Error("cancelled")), { once: true }),
          ),
      };
      const { worker, taskQueue } = await testWorker(env, [delegate, block], {
        onEvent: (event, run) => {
          if (event.type === "tool_execution_start" && event.toolName === "block") blocked.resolve(run.workflowId);
        },
      });
      const workflowId = uniqueId("deep-cancel");
      const tree = [[], [0], [0, 0], [0, 0, 0]].map((p) => below(workflowId, p));
      const handle = await startAgentRun(env.client, {
        taskQueue,
        workflowId,
        model: faux.getModel(),
        prompt: "go",
        tools: ["delegate"],
      });
      const outcome = await worker.runUntil(async () => {
        // The run at depth 3 was refused a child and now blocks: the whole tree is running.
        const blocker = await within(blocked.promise, 60_000, "the deepest run to block");
        const running = await Promise.all(tree.map(status));
        const refused = (await getAgentRun(env.client, blocker).transcript()).find((m) => m.role === "toolResult");
        await handle.cancel();
        const result = await within(handle.result(), 30_000, "the root to end");
        // Right after the root ended, nothing of its tree runs.
        const after = await Promise.all(tree.map(status));
        return { blocker, running, refused, result, after };
      });
      expect(outcome.blocker).toBe(tree[3]);
      expect(outcome.running).toEqual(["RUNNING", "RUNNING", "RUNNING", "RUNNING"]);
      expect(outcome.refused?.role === "toolResult" && outcome.refused.isError).toBe(true);
      expect(textOf(outcome.refused)).toMatch(/already at sub-agent depth 3 and delegate allows at most 3/);
      expect(outcome.result.stopReason).toBe("aborted");
      for (const s of outcome.after) expect(["COMPLETED", "CANCELED", "FAILED"]).toContain(s);
      expect(await status(below(workflowId, [0, 0, 0, 0]))).toBe("NOT_FOUND");
    });

    it("cancelling the root while its tree is still growing leaves no workflow of the tree running", async () => {
      const faux = alwaysDelegates(2, (context) => fauxAssistantMessage(`refused: ${textOf(context.messages.at(-1))}`));
      const delegate = agentTool({
        name: "delegate",
        description: "Delegates",
        model: faux.getModel(),
        tools: ["delegate"],
      });
      const growing = deferred();
      const { worker, taskQueue } = await testWorker(env, [delegate], {
        onEvent: (event, run) => {
          if (event.type === "agent_start" && run.workflowId.split("/").length === 3) growing.resolve(); // depth 2
        },
      });
      const workflowId = uniqueId("grow-cancel");
      const handle = await startAgentRun(env.client, {
        taskQueue,
        workflowId,
        model: faux.getModel(),
        prompt: "go",
        tools: ["delegate"],
      });
      /**
       * Every workflow of the tree below the root, as the histories record it (not visibility, which lags): the
       * children each run started, with their statuses, and the starts a run asked for whose outcome (started or
       * failed) its history does not hold.
       */
      const treeNow = async () => {
        const tree: Record<string, string> = {};
        const unsettled: string[] = [];
        for (const pending = [workflowId]; pending.length > 0; ) {
          const id = pending.shift()!;
          const events = (await env.client.workflow.getHandle(id).fetchHistory()).events ?? [];
          const settled = new Set(
            events.flatMap((e) => {
              const a =
                e.childWorkflowExecutionStartedEventAttributes ?? e.startChildWorkflowExecutionFailedEventAttributes;
              return a ? [Number(a.initiatedEventId)] : [];
            }),
          );
          for (const e of events) {
            const child = e.startChildWorkflowExecutionInitiatedEventAttributes?.workflowId;
            if (!child) continue;
            if (!settled.has(Number(e.eventId))) unsettled.push(child);
            pending.push(child);
          }
          if (id !== workflowId) tree[id] = await status(id);
        }
        return { tree, unsettled };
      };
      const { result, atEnd } = await worker.runUntil(async () => {
        // Cancelled while children at depth 2 start and more are on their way.
        await within(growing.promise, 60_000, "a run at depth 2 to start");
        await handle.cancel();
        const result = await within(handle.result(), 60_000, "the root to end");
        return { result, atEnd: await treeNow() };
      });
      expect(result.stopReason).toBe("aborted");
      expect(Object.keys(atEnd.tree).length).toBeGreaterThanOrEqual(3);
      expect(Object.keys(atEnd.tree).length).toBeLessThanOrEqual(14); // 2 + 4 + 8 below the root, at most
      // Nothing of it runs; and it cannot grow: a closed run starts no child, and every start one asked for has its
      // outcome in its history (none was still on its way when the run closed).
      expect(Object.entries(atEnd.tree).filter(([, s]) => s === "RUNNING")).toEqual([]);
      expect(atEnd.unsettled).toEqual([]);
    });
  });
});
