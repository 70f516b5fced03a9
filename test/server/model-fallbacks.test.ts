/**
 * Model fallback chains (issue #42): `model` as a list. Three wire-format servers, one per model: the first
 * answers 529 (overloaded), the second 503, the third answers; the transcript names who answered each turn, the
 * next turn goes back to the first model (its context converted across providers), and the history replays.
 */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import { Type, type AssistantMessage } from "@jai/ai";
import { startAgentRun } from "../../src/client/client.js";
import { replayHistory } from "../../src/worker/replay.js";
import type { AgentRunResult, AgentTool } from "../../src/shared/contracts.js";
import { ApplicationFailure } from "@temporalio/common";
import { outcome, testWorker, textOf, toolEventProblems, uniqueId, withServer } from "../support/helpers.js";
import { ProviderServer } from "../support/provider-server.js";

const env = withServer();
const servers: ProviderServer[] = [];
beforeAll(async () => {
  for (let i = 0; i < 3; i++) servers.push(await new ProviderServer().start());
});
afterAll(async () => {
  await Promise.all(servers.map((s) => s.stop()));
});

const lookup: AgentTool = {
  name: "lookup",
  description: "Looks a word up",
  parameters: Type.Object({ word: Type.String() }),
  async execute(_id, args: any) {
    return { content: [{ type: "text", text: `${args.word} means hello` }] };
  },
};

const answeredBy = (messages: { role: string }[]) =>
  messages.filter((m): m is AssistantMessage => m.role === "assistant").map((m) => `${m.provider}/${m.model}`);

function chainWorker() {
  const [a, b, c] = servers;
  const models = [a.anthropicModel(), b.openAIModel(), c.openAIModel({ id: "gpt-third" })];
  return testWorker(env, [lookup], { models, getApiKey: () => "sk-test" });
}

describe("model fallbacks", () => {
  it("529 from the first, 503 from the second: the third answers; the next turn is the first's again", async () => {
    const [a, b, c] = servers;
    a.script([
      { fault: { kind: "status", status: 529, message: "Overloaded" } },
      { fault: { kind: "status", status: 529, message: "Overloaded" } },
      { text: "ciao means hello", usage: { input: 40, output: 5 } },
    ]);
    b.script([
      { fault: { kind: "status", status: 503, message: "Service Unavailable" } },
      { fault: { kind: "status", status: 503, message: "Service Unavailable" } },
    ]);
    c.script([
      { toolCalls: [{ id: "call_1", name: "lookup", args: { word: "ciao" } }], usage: { input: 30, output: 8 } },
    ]);
    const { worker, taskQueue, events } = await chainWorker();
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("fallback"),
      model: ["anthropic/claude-test", "openai/gpt-test", "openai/gpt-third"],
      prompt: "What does ciao mean?",
      modelActivity: { retry: { initialInterval: "100ms", maximumAttempts: 2 } },
    });
    const result = await worker.runUntil(handle.result());
    expect(result.stopReason).toBe("stop");
    expect(answeredBy(result.messages)).toEqual(["openai/gpt-third", "anthropic/claude-test"]);
    expect(textOf(result.messages.at(-1))).toBe("ciao means hello");
    // Each model had its attempts (two each), the third answered at once; the first took the second turn.
    expect([a.requests.length, b.requests.length, c.requests.length]).toEqual([3, 2, 1]);
    // The first model's second call carried the third's tool call and its result, in Anthropic's format.
    const body = a.requests[2].body;
    expect(JSON.stringify(body.messages)).toContain('"type":"tool_use"');
    expect(JSON.stringify(body.messages)).toContain("ciao means hello");
    // The events say who answered: each message_end's message names its model.
    const ends = events.flatMap((e) => (e.type === "message_end" && e.message.role === "assistant" ? [e.message] : []));
    expect(answeredBy(ends)).toEqual(["openai/gpt-third", "anthropic/claude-test"]);
    expect(toolEventProblems(events)).toEqual([]);
    // Replay-safe: which model took a call is decided by the recorded failures.
    const history = await handle.workflow.fetchHistory();
    expect((await replayHistory(history, handle.workflowId, env.bundle)).error).toBeUndefined();
    // One model activity per model tried (its retries are attempts of it): three for the first turn, one for the second.
    const calls = (history.events ?? []).filter(
      (e) => e.activityTaskScheduledEventAttributes?.activityType?.name === "streamAssistantMessage",
    );
    expect(calls).toHaveLength(4);
  });

  it("a model gone at its provider (404) falls back at once, without retries", async () => {
    const [a, b] = servers;
    a.script([{ fault: { kind: "status", status: 404, message: "model: claude-test not found" } }]);
    b.script([{ text: "from the second", usage: { input: 10, output: 3 } }]);
    const { worker, taskQueue } = await chainWorker();
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("fallback-gone"),
      model: ["anthropic/claude-test", "openai/gpt-test"],
      prompt: "hi",
    });
    const result = await worker.runUntil(handle.result());
    expect(answeredBy(result.messages)).toEqual(["openai/gpt-test"]);
    expect(a.requests).toHaveLength(1);
  });

  it("when every model of the chain fails, the run ends with the last one's error", async () => {
    const [a, b] = servers;
    a.script([{ fault: { kind: "status", status: 404, message: "no such model" } }]);
    b.script([
      { fault: { kind: "status", status: 503, message: "down" } },
      { fault: { kind: "status", status: 503, message: "down" } },
    ]);
    const { worker, taskQueue } = await chainWorker();
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("fallback-all"),
      model: ["anthropic/claude-test", "openai/gpt-test"],
      prompt: "hi",
      modelActivity: { retry: { initialInterval: "100ms", maximumAttempts: 2 } },
    });
    const failure = await worker.runUntil(outcome(handle.result()));
    const details = (failure instanceof ApplicationFailure ? failure.details?.[0] : failure) as AgentRunResult;
    expect(details?.stopReason).toBe("error");
    expect(details?.errorMessage).toMatch(/openai\/gpt-test unavailable.*the last model of the chain of 2/);
  });

  it("a chain is checked at the door: each model named, at most five", async () => {
    const taskQueue = uniqueId("tq");
    await expect(startAgentRun(env.client, { taskQueue, model: [], prompt: "hi" })).rejects.toThrow(
      /"model" as a fallback chain must list 1 to 5 models, got 0/,
    );
    await expect(
      startAgentRun(env.client, { taskQueue, model: ["openai/gpt-test", "nope"], prompt: "hi" }),
    ).rejects.toThrow(/"model\[1\]" must be "provider\/modelId"/);
  });

  it("a worker refuses a chain model it does not serve, naming its place in the chain", async () => {
    const { worker, taskQueue } = await chainWorker();
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("fallback-unknown"),
      model: ["openai/gpt-test", "openai/gpt-unknown"],
      prompt: "hi",
    });
    const err = await worker.runUntil(handle.result().catch((e: unknown) => e));
    expect(String((err as Error).cause ?? err)).toMatch(/"model\[1\]": unknown model "openai\/gpt-unknown"/);
  });
});
