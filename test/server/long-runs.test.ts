/** Long runs: history grows linearly; a worker without the context cached reads it from the workflow. */
import { describe, expect, it } from "@jest/globals";
import type { WorkflowHandleWithFirstExecutionRunId } from "@temporalio/client";
import proto from "@temporalio/proto";
import { fauxAssistantMessage, fauxToolCall, Type, type Context } from "@jai/ai";
import { startAgentRun } from "../../src/client/client.js";
import type { AgentMessage, AgentTool } from "../../src/shared/contracts.js";
import { fauxModel, testWorker, textOf, uniqueId, withServer } from "../support/helpers.js";

const env = withServer();

const CHUNK = "x".repeat(4000);
const fetchTool: AgentTool = {
  name: "fetch_page",
  description: "Returns a ~4 KB page",
  parameters: Type.Object({ n: Type.Number() }),
  async execute(_id, args: any) {
    return { content: [{ type: "text", text: `page ${args.n}: ${CHUNK}` }] };
  },
};

/** Calls the tool until `turns` results are in, then answers; records the context size of every call and the last result it saw. */
function looping(turns: number, seen: number[], lastResults: string[] = []) {
  return Array.from({ length: turns + 1 }, () => (context: Context) => {
    seen.push(context.messages.length);
    const last = context.messages.at(-1);
    if (last?.role === "toolResult") lastResults.push(`${last.toolCallId}|${last.isError}|${textOf(last)}`);
    const results = context.messages.filter((m) => m.role === "toolResult").length;
    return results < turns
      ? fauxAssistantMessage([fauxToolCall("fetch_page", { n: results + 1 }, { id: `call-${results + 1}` })], {
          stopReason: "toolUse",
        })
      : fauxAssistantMessage(`read ${results} pages`);
  });
}

/**
 * Bytes of history per turn: from one model call's scheduling to the next. A call that never ran (a routed call
 * that waited out its worker's queue on a slow moment, then was sent to the shared queue) is part of its turn.
 */
function bytesPerTurn(events: proto.temporal.api.history.v1.IHistoryEvent[]): number[] {
  const completed = new Set(
    events.flatMap((e) =>
      e.activityTaskCompletedEventAttributes ? [Number(e.activityTaskCompletedEventAttributes.scheduledEventId)] : [],
    ),
  );
  const turns: number[] = [];
  for (const event of events) {
    const size = proto.temporal.api.history.v1.HistoryEvent.encode(event).finish().length;
    if (
      event.activityTaskScheduledEventAttributes?.activityType?.name === "streamAssistantMessage" &&
      completed.has(Number(event.eventId))
    )
      turns.push(0);
    if (turns.length > 0) turns[turns.length - 1] += size;
  }
  return turns;
}

describe("linear history", () => {
  it("adds about the same bytes at turn 100 as at turn 10 while the transcript grows", async () => {
    const seen: number[] = [];
    const lastResults: string[] = [];
    const faux = fauxModel(looping(100, seen, lastResults));
    const { worker, taskQueue } = await testWorker(env, [fetchTool]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("linear"),
      model: faux.getModel(),
      prompt: "read 100 pages",
      maxTurns: 101,
    });
    const result = await worker.runUntil(handle.result());
    expect(result.turns).toBe(101);
    // Every call saw the whole conversation: 1 prompt + 2 messages per finished turn.
    expect(seen).toEqual(Array.from({ length: 101 }, (_, k) => 1 + 2 * k));
    // Each tool result reached the model whole, though the model call's input only referenced it.
    expect(lastResults).toEqual(Array.from({ length: 100 }, (_, k) => `call-${k + 1}|false|page ${k + 1}: ${CHUNK}`));
    const history = await handle.workflow.fetchHistory();
    const perTurn = bytesPerTurn(history.events ?? []);
    expect(perTurn).toHaveLength(101);
    const ratio = perTurn[99] / perTurn[9];
    console.log(
      `history bytes added by turn 10: ${perTurn[9]}, by turn 100: ${perTurn[99]} (ratio ${ratio.toFixed(2)}); total ${perTurn.reduce((a, b) => a + b, 0)} bytes`,
    );
    expect(ratio).toBeLessThanOrEqual(1.5);
    expect(ratio).toBeGreaterThan(0.5);
  }, 120000);

  it("reads the context from the workflow when the worker has not cached it", async () => {
    const seen: number[] = [];
    const lastResults: string[] = [];
    const faux = fauxModel(looping(4, seen, lastResults));
    const { worker, taskQueue } = await testWorker(env, [fetchTool], { contextCacheSize: 0 });
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("miss"),
      model: faux.getModel(),
      prompt: "read 4 pages",
    });
    const result = await worker.runUntil(handle.result());
    expect(seen).toEqual([1, 3, 5, 7, 9]);
    // Tool results passed by reference were rebuilt from the workflow's copy, content and all.
    expect(lastResults).toEqual([1, 2, 3, 4].map((n) => `call-${n}|false|page ${n}: ${CHUNK}`));
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
        return {
          content: [{ type: "text", text: line.repeat(Math.ceil((5 * 1024 * 1024) / line.length)) }],
          details: { blob: "d".repeat(200_000) },
        };
      },
    };
    const photo: AgentTool = {
      name: "photo",
      description: "a 3 MB image",
      parameters: Type.Object({}),
      async execute() {
        return {
          content: [
            { type: "text", text: "here it is" },
            { type: "image", mimeType: "image/png", data: "A".repeat(3 * 1024 * 1024) },
          ],
        };
      },
    };
    let seen: Context | undefined;
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("dump", {}, { id: "d1" }), fauxToolCall("photo", {}, { id: "p1" })], {
        stopReason: "toolUse",
      }),
      (context) => ((seen = structuredClone(context)), fauxAssistantMessage("noted")),
    ]);
    const { worker, taskQueue } = await testWorker(env, [big, photo]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("caps"),
      model: faux.getModel(),
      prompt: "dump everything",
    });
    const result = await worker.runUntil(handle.result());
    expect(result.stopReason).toBe("stop");
    const [dump, image] = seen!.messages.filter((m) => m.role === "toolResult");
    expect(textOf(dump)).toMatch(
      /\[Output truncated: showing the first \d+ lines \/ 50\.0 KB of \d+ lines \/ 5\.0 MB\. Ask for a smaller part/,
    );
    expect(Buffer.byteLength(textOf(dump))).toBeLessThan(52 * 1024);
    expect(image.content).toEqual([
      { type: "text", text: "here it is" },
      { type: "text", text: "[Image omitted: image/png of 3.0 MB exceeds the 1.0 MB limit for tool results.]" },
    ]);
    const stored = result.messages.find((m) => m.role === "toolResult" && m.toolCallId === "d1");
    expect(stored?.role === "toolResult" && stored.details).toMatchObject({ truncated: true, bytes: 200_011 });
    const history = await handle.workflow.fetchHistory();
    const largest = Math.max(
      ...(history.events ?? []).map((e) => proto.temporal.api.history.v1.HistoryEvent.encode(e).finish().length),
    );
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
      fauxAssistantMessage(
        Array.from({ length: 40 }, (_, n) => fauxToolCall("page", { n }, { id: `p${n}` })),
        { stopReason: "toolUse" },
      ),
      fauxAssistantMessage("read 40 pages"),
    ]);
    const { worker, taskQueue } = await testWorker(env, [page]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("bigresult"),
      model: faux.getModel(),
      prompt: "read 40 pages",
    });
    const { result, transcript } = await worker.runUntil(async () => ({
      result: await handle.result(),
      transcript: await handle.transcript(),
    }));
    expect(result.messagesOmitted).toBe(42);
    expect(result.messages).toHaveLength(1);
    expect(textOf(result.messages[0])).toBe("read 40 pages");
    expect(transcript).toHaveLength(43);
    expect(JSON.stringify(transcript).length).toBeGreaterThan(1_900_000); // several ~400 KB query pages
    // The 40 results (1.9 MB) were too big to ride along with the next model call: the worker read them by query.
    const history = await handle.workflow.fetchHistory();
    const largest = Math.max(
      ...(history.events ?? []).map((e) => proto.temporal.api.history.v1.HistoryEvent.encode(e).finish().length),
    );
    expect(largest).toBeLessThan(512 * 1024);
  });
});

describe("continue-as-new", () => {
  const script = (turns: number) =>
    Array.from({ length: turns + 1 }, () => (context: Context) => {
      const done = context.messages.filter((m) => m.role === "toolResult").length;
      return done < turns
        ? fauxAssistantMessage([fauxToolCall("fetch_page", { n: done + 1 }, { id: `c${done + 1}` })], {
            stopReason: "toolUse",
          })
        : fauxAssistantMessage(`done after ${done}`);
    });
  // Two faux registrations differ in their api id; everything else must match.
  const strip = (messages: { timestamp?: number; api?: string }[]) =>
    messages.map(({ timestamp: _t, api: _a, ...rest }) => rest);

  it("continues as new every 2 turns with the same transcript and result as a run without it", async () => {
    const plainFaux = fauxModel(script(6));
    const chainFaux = fauxModel(script(6));
    const plain = await testWorker(env, [fetchTool]);
    const chained = await testWorker(env, [fetchTool]);
    const a = await startAgentRun(env.client, {
      taskQueue: plain.taskQueue,
      workflowId: uniqueId("plain"),
      model: plainFaux.getModel(),
      prompt: "read 6 pages",
    });
    const b = await startAgentRun(env.client, {
      taskQueue: chained.taskQueue,
      workflowId: uniqueId("chain"),
      model: chainFaux.getModel(),
      prompt: "read 6 pages",
      continueAsNew: { afterTurns: 2 },
    });
    const one = await plain.worker.runUntil(async () => ({
      result: await a.result(),
      transcript: await a.transcript(),
    }));
    const two = await chained.worker.runUntil(async () => ({
      result: await b.result(),
      transcript: await b.transcript(),
      state: await b.state(),
    }));

    expect(two.result.turns).toBe(7);
    expect(strip(two.result.messages)).toEqual(strip(one.result.messages));
    expect(two.result.usage).toEqual(one.result.usage);
    expect(strip(two.transcript)).toEqual(strip(one.transcript));
    expect(two.state).toMatchObject({ status: "completed", turn: 7, messageCount: 14 });
    expect(two.state.earlierMessages).toBeGreaterThan(0);
    // It really continued as new: the first run of the chain ended that way.
    const firstRun = await env.client.workflow
      .getHandle(b.workflowId, (b.workflow as WorkflowHandleWithFirstExecutionRunId).firstExecutionRunId)
      .fetchHistory();
    expect(firstRun.events?.at(-1)?.workflowExecutionContinuedAsNewEventAttributes).toBeTruthy();
    // Events kept flowing as one run: one start, one end, a turn_start per turn.
    const types = chained.events.map((e) => e.type);
    expect(types.filter((t) => t === "agent_start")).toHaveLength(1);
    expect(types.filter((t) => t === "agent_end")).toHaveLength(1);
    expect(types.filter((t) => t === "turn_start")).toHaveLength(7);
  }, 60000);

  it("continues a session as new between prompts", async () => {
    const faux = fauxModel(
      Array.from(
        { length: 3 },
        () => (context: Context) => fauxAssistantMessage(`${context.messages.length} messages so far`),
      ),
    );
    const { worker, taskQueue } = await testWorker(env, []);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("session-can"),
      model: faux.getModel(),
      prompt: "one",
      session: true,
      continueAsNew: { afterTurns: 1 },
    });
    const result = await worker.runUntil(async () => {
      expect(textOf((await handle.prompt("two")).messages[1])).toBe("3 messages so far");
      expect(textOf((await handle.prompt("three")).messages[1])).toBe("5 messages so far");
      await handle.close();
      return handle.result();
    });
    expect(result.messages.map((m) => textOf(m))).toEqual([
      "one",
      "1 messages so far",
      "two",
      "3 messages so far",
      "three",
      "5 messages so far",
    ]);
  }, 60000);
});

describe("context budget", () => {
  const shortened = (context: Context) =>
    context.messages.filter((m) => m.role === "toolResult" && textOf(m).startsWith("[Earlier tool result shortened"))
      .length;
  const paired = (context: Context) => {
    const calls = context.messages.flatMap((m) =>
      m.role === "assistant"
        ? m.content.filter((c) => c.type === "toolCall").map((c) => (c.type === "toolCall" ? c.id : ""))
        : [],
    );
    const results = context.messages.flatMap((m) => (m.role === "toolResult" ? [m.toolCallId] : []));
    return JSON.stringify(calls) === JSON.stringify(results);
  };

  it("shortens the oldest tool results before a call that would not fit, keeping every call's result", async () => {
    const contexts: Context[] = [];
    const faux = fauxModel(
      Array.from({ length: 9 }, () => (context: Context) => {
        contexts.push(structuredClone(context));
        const done = context.messages.filter((m) => m.role === "toolResult").length;
        return done < 8
          ? fauxAssistantMessage([fauxToolCall("fetch_page", { n: done + 1 }, { id: `c${done + 1}` })], {
              stopReason: "toolUse",
            })
          : fauxAssistantMessage("done");
      }),
    );
    const { worker, taskQueue } = await testWorker(env, [fetchTool]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("budget"),
      model: faux.getModel(),
      prompt: "read 8 pages",
      contextBudgetTokens: 4000,
    });
    const result = await worker.runUntil(handle.result());
    expect(result.stopReason).toBe("stop");
    const last = contexts.at(-1)!;
    expect(shortened(last)).toBeGreaterThan(0);
    expect(paired(last)).toBe(true);
    expect(JSON.stringify(last.messages).length / 4).toBeLessThan(4000);
    // The transcript keeps what the tools returned; only the model's view was shortened.
    expect(result.messages.filter((m) => m.role === "toolResult").every((m) => textOf(m).includes(CHUNK))).toBe(true);
  });

  it("answers a context overflow from the provider with one compaction and a retry", async () => {
    let overflows = 0;
    const faux = fauxModel(
      Array.from({ length: 8 }, () => (context: Context) => {
        const done = context.messages.filter((m) => m.role === "toolResult").length;
        if (done === 4 && shortened(context) === 0) {
          overflows++;
          return fauxAssistantMessage([], {
            stopReason: "error",
            errorMessage: "prompt is too long: 250000 tokens > 200000 maximum",
          });
        }
        return done < 4
          ? fauxAssistantMessage([fauxToolCall("fetch_page", { n: done + 1 }, { id: `c${done + 1}` })], {
              stopReason: "toolUse",
            })
          : fauxAssistantMessage(`done, ${shortened(context)} shortened`);
      }),
    );
    const { worker, taskQueue } = await testWorker(env, [fetchTool]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("overflow"),
      model: faux.getModel(),
      prompt: "read 4 pages",
    });
    const result = await worker.runUntil(handle.result());
    expect(overflows).toBe(1);
    expect(result.stopReason).toBe("stop");
    expect(textOf(result.messages.at(-1))).toMatch(/^done, [1-9]\d* shortened$/);
  });

  it("ends with a clear error when the provider still overflows after compacting", async () => {
    const overflow = () =>
      fauxAssistantMessage([], {
        stopReason: "error",
        errorMessage: "prompt is too long: 250000 tokens > 200000 maximum",
      });
    const faux = fauxModel([
      fauxAssistantMessage([fauxToolCall("fetch_page", { n: 1 }, { id: "c1" })], { stopReason: "toolUse" }),
      fauxAssistantMessage([fauxToolCall("fetch_page", { n: 2 }, { id: "c2" })], { stopReason: "toolUse" }),
      overflow,
      overflow,
      overflow,
    ]);
    const { worker, taskQueue } = await testWorker(env, [fetchTool]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("overflow2"),
      model: faux.getModel(),
      prompt: "read",
    });
    const result = await worker.runUntil(handle.result());
    expect(result.stopReason).toBe("error");
    expect(result.errorMessage).toMatch(/^Context overflow: the conversation no longer fits/);
    expect(faux.state.callCount).toBe(4); // two turns, then the overflow, one compaction, one retry
  });

  it("uses the worker's own compactor, and falls back to the default when it breaks the structure", async () => {
    const seen: Context[] = [];
    const script = () =>
      Array.from({ length: 7 }, () => (context: Context) => {
        seen.push(structuredClone(context));
        const done = context.messages.filter((m) => m.role === "toolResult").length;
        return done < 6
          ? fauxAssistantMessage([fauxToolCall("fetch_page", { n: done + 1 }, { id: `c${done + 1}` })], {
              stopReason: "toolUse",
            })
          : fauxAssistantMessage("done");
      });
    const summarize = async (messages: AgentMessage[]) =>
      messages.map((m) =>
        m.role === "toolResult" ? { ...m, content: [{ type: "text" as const, text: "[summary]" }] } : m,
      );
    const good = await testWorker(env, [fetchTool], { compactContext: summarize });
    const faux = fauxModel(script());
    const handle = await startAgentRun(env.client, {
      taskQueue: good.taskQueue,
      workflowId: uniqueId("worker-compact"),
      model: faux.getModel(),
      prompt: "read",
      contextBudgetTokens: 3000,
      compaction: "worker",
    });
    await good.worker.runUntil(handle.result());
    expect(seen.some((c) => c.messages.some((m) => m.role === "toolResult" && textOf(m) === "[summary]"))).toBe(true);

    seen.length = 0;
    const broken = await testWorker(env, [fetchTool], {
      compactContext: async (messages) => messages.filter((m) => m.role !== "toolResult"),
    });
    const faux2 = fauxModel(script());
    const handle2 = await startAgentRun(env.client, {
      taskQueue: broken.taskQueue,
      workflowId: uniqueId("worker-compact-bad"),
      model: faux2.getModel(),
      prompt: "read",
      contextBudgetTokens: 3000,
      compaction: "worker",
    });
    const result = await broken.worker.runUntil(handle2.result());
    expect(result.stopReason).toBe("stop");
    expect(shortened(seen.at(-1)!)).toBeGreaterThan(0);
    expect(paired(seen.at(-1)!)).toBe(true);
  });
});
