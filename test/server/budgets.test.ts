/**
 * Budgets (issue #42): each limit ends a run with stopReason "budget" and the limit named, never mid-tool; the
 * spend survives continue-as-new and a worker that stops mid-run; a child's spend counts in its parent.
 * Real server; the wire-format test server where exact usage and prices matter, faux models elsewhere.
 */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { fauxAssistantMessage, fauxToolCall, Type } from "@jai/ai";
import { getAgentRun, startAgentRun } from "../../src/client/client.js";
import { agentTool } from "../../src/worker/subagents/agent-tool.js";
import { replayHistory } from "../../src/worker/replay.js";
import type { AgentEvent, AgentRunResult, AgentTool } from "../../src/shared/contracts.js";
import { createAgentWorker } from "../../src/worker/worker.js";
import {
  deferred,
  fauxModel,
  testWorker,
  textOf,
  toolEventProblems,
  uniqueId,
  within,
  withServer,
} from "../support/helpers.js";
import { ProviderServer, type Step } from "../support/provider-server.js";

const env = withServer();
let server: ProviderServer;
beforeAll(async () => {
  server = await new ProviderServer().start();
});
afterAll(async () => {
  await server?.stop();
});

let lookups = 0;
const lookup: AgentTool = {
  name: "lookup",
  description: "Looks a word up",
  parameters: Type.Object({ word: Type.String() }),
  async execute(_id, args: any) {
    lookups++;
    return { content: [{ type: "text", text: `${args.word} means hello` }] };
  },
};

/** What `slow` waits for before it returns (set by the test that uses it). */
let slowUntil: () => Promise<void> = async () => {};
const slow: AgentTool = {
  name: "slow",
  description: "Returns once its run's time is up",
  parameters: Type.Object({}),
  async execute() {
    await slowUntil();
    return { content: [{ type: "text", text: "done slowly" }] };
  },
};

/** Every tool call of the transcript has its result: the run never ended mid-tool. */
function unansweredCalls(result: AgentRunResult): string[] {
  const answered = new Set(result.messages.flatMap((m) => (m.role === "toolResult" ? [m.toolCallId] : [])));
  return result.messages.flatMap((m) =>
    m.role === "assistant"
      ? m.content.flatMap((c) => (c.type === "toolCall" && !answered.has(c.id) ? [c.id] : []))
      : [],
  );
}

const toolStep = (i: number): Step => ({
  toolCalls: [{ id: `call-${i}`, name: "lookup", args: { word: `w${i}` } }],
  usage: { input: 500, output: 100 },
});

/** A run on the wire-format server: each call reports 500 input and 100 output tokens. */
async function serverRun(budget: object, steps: Step[], modelOverrides: object = {}) {
  server.script(steps);
  const model = server.openAIModel({ maxTokens: 100, ...modelOverrides });
  const { worker, taskQueue, events } = await testWorker(env, [lookup], { models: [model], getApiKey: () => "sk-x" });
  const handle = await startAgentRun(env.client, {
    taskQueue,
    workflowId: uniqueId("budget"),
    model: "openai/gpt-test",
    prompt: "Look some words up",
    budget,
    modelActivity: { retry: { initialInterval: "100ms", maximumAttempts: 2 } },
  });
  const result = await worker.runUntil(handle.result());
  const state = await handle.state();
  return { result, state, events, handle };
}

describe("budgets", () => {
  it("maxTokens: the run ends before a call that could pass it, with the limit named and spend reported", async () => {
    // 600 tokens per call; a call may add up to its context and 100 output tokens. After two calls (1,200 spent)
    // a third could pass 1,250: the run ends there, with every tool call answered.
    const { result, state, events, handle } = await serverRun({ maxTokens: 1250 }, [1, 2, 3, 4].map(toolStep));
    expect(result.stopReason).toBe("budget");
    expect(result.budgetExceeded).toBe("maxTokens");
    expect(result.turns).toBe(2);
    expect(server.requests).toHaveLength(2);
    expect(result.errorMessage).toMatch(/^Budget: maxTokens 1,250 reached \(1,200 tokens spent/);
    expect(result.spend).toMatchObject({ tokens: 1200, toolCalls: 2, left: { tokens: 50 } });
    expect(unansweredCalls(result)).toEqual([]);
    expect(state).toMatchObject({ status: "completed", stopReason: "budget", budgetExceeded: "maxTokens" });
    expect(state.spend).toMatchObject({ tokens: 1200, left: { tokens: 50 } });
    expect(events.at(-1)?.type).toBe("agent_end");
    expect(toolEventProblems(events)).toEqual([]);
    // Operators find it by its stop reason.
    const described = await handle.workflow.describe();
    expect(described.searchAttributes?.AgentStopReason).toEqual(["budget"]);
  });

  it("maxCostUsd: checked against the model's prices before each call, so the spend stays under it", async () => {
    // $1,000 per million tokens each way: a call costs $0.60; the next one may cost its context and $0.10 of output.
    const { result } = await serverRun({ maxCostUsd: 0.65 }, [1, 2, 3].map(toolStep), {
      cost: { input: 1000, output: 1000, cacheRead: 0, cacheWrite: 0 },
    });
    expect(result).toMatchObject({ stopReason: "budget", budgetExceeded: "maxCostUsd", turns: 1 });
    expect(result.spend?.costUsd).toBeCloseTo(0.6, 6);
    expect(result.spend?.costUsd).toBeLessThanOrEqual(0.65);
    expect(result.errorMessage).toMatch(/^Budget: maxCostUsd \$0\.6500 reached \(\$0\.6000 spent/);
    expect(unansweredCalls(result)).toEqual([]);
  });

  it("maxToolCalls: calls past it are not run, each gets an error result, and the run ends after the turn", async () => {
    const faux = fauxModel([
      fauxAssistantMessage(
        [1, 2, 3].map((i) => fauxToolCall("lookup", { word: `w${i}` }, { id: `c${i}` })),
        { stopReason: "toolUse" },
      ),
      fauxAssistantMessage("never asked"),
    ]);
    const { worker, taskQueue, events } = await testWorker(env, [lookup]);
    const before = lookups;
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("budget-tools"),
      model: faux.getModel(),
      prompt: "three lookups",
      budget: { maxToolCalls: 2 },
    });
    const result = await worker.runUntil(handle.result());
    expect(result).toMatchObject({ stopReason: "budget", budgetExceeded: "maxToolCalls", turns: 1 });
    expect(lookups - before).toBe(2);
    const results = result.messages.filter((m) => m.role === "toolResult");
    expect(results.map((m) => [m.toolCallId, m.isError])).toEqual([
      ["c1", false],
      ["c2", false],
      ["c3", true],
    ]);
    expect(textOf(results[2])).toMatch(/Budget: maxToolCalls 2 reached/);
    expect(result.spend).toMatchObject({ toolCalls: 2, left: { toolCalls: 0 } });
    expect(unansweredCalls(result)).toEqual([]);
    expect(toolEventProblems(events)).toEqual([]);
    expect(faux.state.callCount).toBe(1);
  });

  it("maxDuration: a run past it makes no further model call, and its tool batch finished first", async () => {
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("slow", {}, { id: "s1" })], { stopReason: "toolUse" }),
      fauxAssistantMessage("never asked"),
    ]);
    const { worker, taskQueue } = await testWorker(env, [slow]);
    const maxDurationMs = 3000;
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("budget-time"),
      model: faux.getModel(),
      prompt: "be slow",
      budget: { maxDuration: maxDurationMs },
    });
    // The tool returns once the run's time is up by the run's own clock: the start of its first completed workflow
    // task, which history records (the workflow's Date.now() is its task's start; the run's time starts there). So
    // the run is past maxDuration when the tool ends, however slow the machine; and before it, the first model call
    // is made within 3 s of the start.
    slowUntil = async () => {
      const events = (await handle.workflow.fetchHistory()).events ?? [];
      const completed = events.find((e) => e.workflowTaskCompletedEventAttributes)!;
      const startedId = Number(completed.workflowTaskCompletedEventAttributes!.startedEventId);
      const first = events.find((e) => Number(e.eventId) === startedId)!.eventTime!;
      const startedAt = Number(first.seconds) * 1000 + Math.floor((first.nanos ?? 0) / 1e6);
      await new Promise((r) => setTimeout(r, Math.max(0, startedAt + maxDurationMs + 50 - Date.now())));
    };
    const result = await worker.runUntil(handle.result());
    expect(result).toMatchObject({ stopReason: "budget", budgetExceeded: "maxDuration", turns: 1 });
    expect(result.messages.filter((m) => m.role === "toolResult").map(textOf)).toEqual(["done slowly"]);
    expect(result.spend?.elapsedMs).toBeGreaterThanOrEqual(maxDurationMs);
    expect(faux.state.callCount).toBe(1);
  });

  it("the spend survives continue-as-new and a worker that stops mid-run (a new one replays it from history)", async () => {
    const faux = fauxModel(
      [1, 2, 3, 4, 5].map((i) =>
        fauxAssistantMessage([fauxToolCall("lookup", { word: `w${i}` }, { id: `k${i}` })], {
          stopReason: "toolUse",
        }),
      ),
    );
    const second = deferred();
    let calls = 0;
    const counted: AgentTool = {
      ...lookup,
      async execute(id, args: any, signal, onUpdate) {
        if (++calls === 2) second.resolve();
        return lookup.execute(id, args, signal, onUpdate);
      },
    };
    const { worker, taskQueue } = await testWorker(env, [counted]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("budget-chain"),
      model: faux.getModel(),
      prompt: "look up forever",
      budget: { maxToolCalls: 3 },
      continueAsNew: { afterTurns: 1 },
    });
    // The first worker stops after the second call: its cache is gone, the next worker rebuilds the run from history.
    await worker.runUntil(within(second.promise, 60_000, "second tool call"));
    const next = await createAgentWorker({
      connection: env.connection,
      taskQueue,
      tools: [counted],
      workflowBundle: env.bundle,
    });
    const result = await next.runUntil(getAgentRun(env.client, handle.workflowId).result());
    expect(result).toMatchObject({ stopReason: "budget", budgetExceeded: "maxToolCalls" });
    expect(result.spend?.toolCalls).toBe(3);
    // Three calls ran in all, across the chain and both workers; the fourth was refused.
    expect(calls).toBe(3);
    const history = await getAgentRun(env.client, handle.workflowId).workflow.fetchHistory();
    // The result came from a continued run of the chain.
    expect(history.events?.[0].workflowExecutionStartedEventAttributes?.continuedExecutionRunId).toBeTruthy();
    expect((await replayHistory(history, handle.workflowId, env.bundle)).error).toBeUndefined();
  });

  it("a child's spend counts against its parent's budget, and the child gets only what is left", async () => {
    const child = fauxModel([
      fauxAssistantMessage(
        [fauxToolCall("lookup", { word: "a" }, { id: "x1" }), fauxToolCall("lookup", { word: "b" }, { id: "x2" })],
        { stopReason: "toolUse" },
      ),
      fauxAssistantMessage("found a and b"),
    ]);
    const researcher = agentTool({
      name: "researcher",
      description: "Researches",
      model: child.getModel(),
      tools: ["lookup"],
    });
    const parent = fauxModel([
      fauxAssistantMessage([fauxToolCall("researcher", { prompt: "a and b" }, { id: "r1" })], {
        stopReason: "toolUse",
      }),
      fauxAssistantMessage([fauxToolCall("lookup", { word: "c" }, { id: "p2" })], { stopReason: "toolUse" }),
      fauxAssistantMessage("never asked"),
    ]);
    const seen: AgentEvent[] = [];
    const { worker, taskQueue } = await testWorker(env, [researcher, lookup], {
      onEvent: (event) => void seen.push(event),
    });
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("budget-parent"),
      model: parent.getModel(),
      prompt: "research",
      budget: { maxToolCalls: 3 },
    });
    const result = await worker.runUntil(handle.result());
    // The researcher call (1) and the child's two lookups (2) spend all three: the parent's next call is refused.
    expect(result).toMatchObject({ stopReason: "budget", budgetExceeded: "maxToolCalls", turns: 2 });
    expect(result.spend?.toolCalls).toBe(3);
    const results = result.messages.filter((m) => m.role === "toolResult");
    expect(results.map((m) => [m.toolCallId, m.isError])).toEqual([
      ["r1", false],
      ["p2", true],
    ]);
    const childRun = getAgentRun(env.client, `${handle.workflowId}/sub-1-0`);
    const childResult = await childRun.result();
    expect(childResult.spend).toMatchObject({ toolCalls: 2, left: { toolCalls: 0 } });
    // The child's tokens are in the parent's spend.
    const own = result.messages.reduce((n, m) => n + (m.role === "assistant" ? m.usage.totalTokens : 0), 0);
    expect(result.spend!.tokens).toBe(own + childResult.usage.totalTokens);
  });

  it("a child that fails counts too, and children of one batch share what is left", async () => {
    // A failing child: two lookups, then its model fails for good (the child's run fails with its result).
    const failing = fauxModel([
      fauxAssistantMessage(
        [fauxToolCall("lookup", { word: "a" }, { id: "f1" }), fauxToolCall("lookup", { word: "b" }, { id: "f2" })],
        { stopReason: "toolUse" },
      ),
      fauxAssistantMessage("", { stopReason: "error", errorMessage: "the model broke" }),
    ]);
    const fails = agentTool({ name: "fails", description: "Fails", model: failing.getModel(), tools: ["lookup"] });
    const parent = fauxModel([
      fauxAssistantMessage([fauxToolCall("fails", { prompt: "go" }, { id: "p1" })], { stopReason: "toolUse" }),
      fauxAssistantMessage(
        [1, 2, 3].map((i) => fauxToolCall("lookup", { word: `w${i}` }, { id: `q${i}` })),
        { stopReason: "toolUse" },
      ),
      fauxAssistantMessage("never asked"),
    ]);
    const { worker, taskQueue } = await testWorker(env, [fails, lookup]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("budget-failing-child"),
      model: parent.getModel(),
      prompt: "go",
      budget: { maxToolCalls: 5 },
    });
    const result = await worker.runUntil(handle.result());
    // 1 (the sub-agent call) + 2 (the failed child's) + 2 of the 3 lookups: the third is refused.
    expect(result).toMatchObject({ stopReason: "budget", budgetExceeded: "maxToolCalls", spend: { toolCalls: 5 } });
    const results = result.messages.filter((m) => m.role === "toolResult");
    expect(results.map((m) => [m.toolCallId, m.isError])).toEqual([
      ["p1", true],
      ["q1", false],
      ["q2", false],
      ["q3", true],
    ]);

    // Two sub-agents in one batch, with 2 tool calls left between them: each gets 1, so 2 lookups run in all.
    const child = fauxModel(
      [0, 1].map(() =>
        fauxAssistantMessage(
          [fauxToolCall("lookup", { word: "x" }, { id: "y1" }), fauxToolCall("lookup", { word: "y" }, { id: "y2" })],
          { stopReason: "toolUse" },
        ),
      ),
    );
    const researcher = agentTool({ name: "researcher", description: "R", model: child.getModel(), tools: ["lookup"] });
    const twins = fauxModel([
      fauxAssistantMessage(
        [
          fauxToolCall("researcher", { prompt: "a" }, { id: "t1" }),
          fauxToolCall("researcher", { prompt: "b" }, { id: "t2" }),
        ],
        { stopReason: "toolUse" },
      ),
      fauxAssistantMessage("done"),
    ]);
    const second = await testWorker(env, [researcher, lookup]);
    const before = lookups;
    const twinsRun = await startAgentRun(env.client, {
      taskQueue: second.taskQueue,
      workflowId: uniqueId("budget-twins"),
      model: twins.getModel(),
      prompt: "go",
      budget: { maxToolCalls: 4 },
    });
    const twinsResult = await second.worker.runUntil(twinsRun.result());
    expect(lookups - before).toBe(2);
    expect(twinsResult.spend?.toolCalls).toBe(4);
    for (const id of ["sub-1-0", "sub-1-1"]) {
      const childResult = await getAgentRun(env.client, `${twinsRun.workflowId}/${id}`).result();
      expect(childResult).toMatchObject({ stopReason: "budget", spend: { toolCalls: 1 } });
    }
  });

  it("the check before a call takes the worst model of a fallback chain: a pricier fallback cannot pass the budget", async () => {
    const pricey = await new ProviderServer().start();
    try {
      server.script([{ fault: { kind: "status", status: 503, message: "down" } }]);
      pricey.script([{ text: "expensive answer", usage: { input: 500, output: 100 } }]);
      const cheap = server.openAIModel({ maxTokens: 100, cost: { input: 1, output: 1, cacheRead: 0, cacheWrite: 0 } });
      const dear = pricey.openAIModel({
        id: "gpt-dear",
        maxTokens: 100,
        cost: { input: 1000, output: 1000, cacheRead: 0, cacheWrite: 0 },
      });
      const { worker, taskQueue } = await testWorker(env, [lookup], { models: [cheap, dear], getApiKey: () => "sk-x" });
      const handle = await startAgentRun(env.client, {
        taskQueue,
        workflowId: uniqueId("budget-chain-worst"),
        model: ["openai/gpt-test", "openai/gpt-dear"],
        prompt: "hi",
        budget: { maxCostUsd: 0.05 },
        modelActivity: { retry: { initialInterval: "100ms", maximumAttempts: 1 } },
      });
      const result = await worker.runUntil(handle.result());
      // $0.10 of output alone at the fallback's price: no call is made at all.
      expect(result).toMatchObject({ stopReason: "budget", budgetExceeded: "maxCostUsd", turns: 0 });
      expect(server.requests.length + pricey.requests.length).toBe(0);
    } finally {
      await pricey.stop();
    }
  });

  it("a bad budget is refused at the door, naming the field", async () => {
    const taskQueue = uniqueId("tq");
    for (const [budget, message] of [
      [{ maxTokens: 0 }, /"budget.maxTokens" must be a positive integer/],
      [{ maxCostUsd: -1 }, /"budget.maxCostUsd" must be a positive number/],
      [{ maxDuration: "soon" }, /"budget.maxDuration" must be a positive duration/],
      [{ maxTurns: 3 }, /"budget.maxTurns" is not a budget limit/],
      [5, /"budget" must be an object/],
    ] as const) {
      await expect(
        startAgentRun(env.client, { taskQueue, model: "faux/x", prompt: "hi", budget: budget as never }),
      ).rejects.toThrow(message);
    }
  });
});
