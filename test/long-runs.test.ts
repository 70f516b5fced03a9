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

describe("no payload over the limit", () => {
  it("cuts a 5 MB text result and replaces a 3 MB image with notes the model sees", async () => {
    const big: AgentTool = {
      name: "dump",
      description: "5 MB of log lines",
      parameters: Type.Object({}),
      async execute() {
        const line = "2026-11-30 12:00:00 INFO something happened in the system\n";
        return { content: [{ type: "text", text: line.repeat(Math.ceil((5 * 1024 * 1024) / line.length)) }], details: { blob: "d".repeat(200_000) } };
      },
    };
    const photo: AgentTool = {
      name: "photo",
      description: "a 3 MB image",
      parameters: Type.Object({}),
      async execute() {
        return { content: [{ type: "text", text: "here it is" }, { type: "image", mimeType: "image/png", data: "A".repeat(3 * 1024 * 1024) }] };
      },
    };
    let seen: Context | undefined;
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("dump", {}, { id: "d1" }), fauxToolCall("photo", {}, { id: "p1" })], { stopReason: "toolUse" }),
      (context) => ((seen = structuredClone(context)), fauxAssistantMessage("noted")),
    ]);
    const { worker, taskQueue } = await testWorker(env, [big, photo]);
    const handle = await startAgentRun(env.client, { taskQueue, workflowId: uniqueId("caps"), model: faux.getModel(), prompt: "dump everything" });
    const result = await worker.runUntil(handle.result());
    expect(result.stopReason).toBe("stop");
    const [dump, image] = seen!.messages.filter((m) => m.role === "toolResult");
    expect(textOf(dump)).toMatch(/\[Output truncated: showing the first \d+ lines \/ 50\.0 KB of \d+ lines \/ 5\.0 MB\. Ask for a smaller part/);
    expect(Buffer.byteLength(textOf(dump))).toBeLessThan(52 * 1024);
    expect(image.content).toEqual([
      { type: "text", text: "here it is" },
      { type: "text", text: "[Image omitted: image/png of 3.0 MB exceeds the 1.0 MB limit for tool results.]" },
    ]);
    const stored = result.messages.find((m) => m.role === "toolResult" && m.toolCallId === "d1");
    expect(stored?.role === "toolResult" && stored.details).toMatchObject({ truncated: true, bytes: 200_011 });
    const history = await handle.workflow.fetchHistory();
    const largest = Math.max(...(history.events ?? []).map((e) => proto.temporal.api.history.v1.HistoryEvent.encode(e).finish().length));
    expect(largest).toBeLessThan(512 * 1024); // under even Temporal's payload warning threshold
  });

  it("keeps the result under the limit when the run's messages are too big, and pages the transcript", async () => {
    const page: AgentTool = {
      name: "page",
      description: "48 KB",
      parameters: Type.Object({ n: Type.Number() }),
      async execute(_id, args: any) {
        return { content: [{ type: "text", text: `${args.n}:${"y".repeat(48 * 1024)}` }] };
      },
    };
    const faux = fauxModel([
      fauxAssistantMessage(Array.from({ length: 40 }, (_, n) => fauxToolCall("page", { n }, { id: `p${n}` })), { stopReason: "toolUse" }),
      fauxAssistantMessage("read 40 pages"),
    ]);
    const { worker, taskQueue } = await testWorker(env, [page]);
    const handle = await startAgentRun(env.client, { taskQueue, workflowId: uniqueId("bigresult"), model: faux.getModel(), prompt: "read 40 pages" });
    const { result, transcript } = await worker.runUntil(async () => ({ result: await handle.result(), transcript: await handle.transcript() }));
    expect(result.messagesOmitted).toBe(42);
    expect(result.messages).toHaveLength(1);
    expect(textOf(result.messages[0])).toBe("read 40 pages");
    expect(transcript).toHaveLength(43);
    expect(JSON.stringify(transcript).length).toBeGreaterThan(1_900_000); // several ~400 KB query pages
    // The 40 results (1.9 MB) were too big to ride along with the next model call: the worker read them by query.
    const history = await handle.workflow.fetchHistory();
    const largest = Math.max(...(history.events ?? []).map((e) => proto.temporal.api.history.v1.HistoryEvent.encode(e).finish().length));
    expect(largest).toBeLessThan(512 * 1024);
  });
});
