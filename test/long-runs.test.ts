/** Long runs: history grows linearly; a worker without the context cached reads it from the workflow. */
import { afterAll, beforeAll, describe, expect, it } from "@jest/globals";
import proto from "@temporalio/proto";
import { fauxAssistantMessage, fauxToolCall, Type, type Context } from "@jai/ai";
import { startAgentRun } from "../src/client.js";
import type { AgentTool } from "../src/types.js";
import { fauxModel, openTestEnv, testWorker, textOf, uniqueId, type TestEnv } from "./helpers.js";

let env: TestEnv;
beforeAll(async () => {
  env = await openTestEnv();
});
afterAll(async () => {
  await env?.close();
});

const CHUNK = "x".repeat(4000);
const fetchTool: AgentTool = {
  name: "fetch_page",
  description: "Returns a ~4 KB page",
  parameters: Type.Object({ n: Type.Number() }),
  async execute(_id, args: any) {
    return { content: [{ type: "text", text: `page ${args.n}: ${CHUNK}` }] };
  },
};

/** Calls the tool until `turns` results are in, then answers; records the context size of every call. */
function looping(turns: number, seen: number[]) {
  return Array.from({ length: turns + 1 }, () => (context: Context) => {
    seen.push(context.messages.length);
    const results = context.messages.filter((m) => m.role === "toolResult").length;
    return results < turns
      ? fauxAssistantMessage([fauxToolCall("fetch_page", { n: results + 1 }, { id: `call-${results + 1}` })], { stopReason: "toolUse" })
      : fauxAssistantMessage(`read ${results} pages`);
  });
}

/** Bytes of history per turn: from one model call's scheduling to the next. */
function bytesPerTurn(events: proto.temporal.api.history.v1.IHistoryEvent[]): number[] {
  const turns: number[] = [];
  for (const event of events) {
    const size = proto.temporal.api.history.v1.HistoryEvent.encode(event).finish().length;
    if (event.activityTaskScheduledEventAttributes?.activityType?.name === "streamAssistantMessage") turns.push(0);
    if (turns.length > 0) turns[turns.length - 1] += size;
  }
  return turns;
}

describe("linear history", () => {
  it("adds about the same bytes at turn 100 as at turn 10 while the transcript grows", async () => {
    const seen: number[] = [];
    const faux = fauxModel(looping(100, seen));
    const { worker, taskQueue } = await testWorker(env, [fetchTool]);
    const handle = await startAgentRun(env.client, { taskQueue, workflowId: uniqueId("linear"), model: faux.getModel(), prompt: "read 100 pages", maxTurns: 101 });
    const result = await worker.runUntil(handle.result());
    expect(result.turns).toBe(101);
    // Every call saw the whole conversation: 1 prompt + 2 messages per finished turn.
    expect(seen).toEqual(Array.from({ length: 101 }, (_, k) => 1 + 2 * k));
    const history = await handle.workflow.fetchHistory();
    const perTurn = bytesPerTurn(history.events ?? []);
    expect(perTurn).toHaveLength(101);
    const ratio = perTurn[99] / perTurn[9];
    console.log(`history bytes added by turn 10: ${perTurn[9]}, by turn 100: ${perTurn[99]} (ratio ${ratio.toFixed(2)}); total ${perTurn.reduce((a, b) => a + b, 0)} bytes`);
    expect(ratio).toBeLessThanOrEqual(1.5);
    expect(ratio).toBeGreaterThan(0.5);
  }, 120000);

  it("reads the context from the workflow when the worker has not cached it", async () => {
    const seen: number[] = [];
    const faux = fauxModel(looping(4, seen));
    const { worker, taskQueue } = await testWorker(env, [fetchTool], { contextCacheSize: 0 });
    const handle = await startAgentRun(env.client, { taskQueue, workflowId: uniqueId("miss"), model: faux.getModel(), prompt: "read 4 pages" });
    const result = await worker.runUntil(handle.result());
    expect(seen).toEqual([1, 3, 5, 7, 9]);
    expect(textOf(result.messages.at(-1))).toBe("read 4 pages");
  });
});
