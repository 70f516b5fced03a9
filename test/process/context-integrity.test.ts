/**
 * The model sees exactly the context the workflow recorded, whatever ids the
 * model reuses and whatever a worker holds in its cache (issue 9, rows 4-5).
 * Row 5 (a worker paused past its heartbeat timeout) needs real processes:
 * test/process/crash.test.ts.
 */
import { describe, expect, it } from "@jest/globals";
import { createHash } from "node:crypto";
import { fauxAssistantMessage, fauxToolCall, Type, type Context } from "@jai/ai";
import { startAgentRun } from "../../src/client/client.js";
import { ContextCache, workerContextDigest } from "../../src/worker/activities/context-cache.js";
import type { AgentMessage, AgentTool } from "../../src/shared/contracts.js";
import { canonicalJson, contextDigest, sha256Hex } from "../../src/shared/context-digest.js";
import { contextMismatches, SeenContexts } from "../support/context-check.js";
import { fauxModel, testWorker, textOf, uniqueId, withServer } from "../support/helpers.js";

const env = withServer();

const echo: AgentTool = {
  name: "echo",
  description: "Echoes its text",
  parameters: Type.Object({ text: Type.String() }),
  async execute(_id, args: any) {
    return { content: [{ type: "text", text: `echo:${args.text}` }], details: { echoed: args.text } };
  },
};

const guarded: AgentTool = { ...echo, name: "guarded", requiresApproval: true, approvalTimeout: "50ms" };

/** The tool results the model was shown, in order. */
const resultsSeen = (context: Context) =>
  context.messages
    .filter((m) => m.role === "toolResult")
    .map((m) => textOf(m))
    .join(", ");

/** A scripted run on a fresh worker; each response is a function of the context, the last one reports what it saw. */
async function runScript(turns: ((context: Context) => ReturnType<typeof fauxAssistantMessage>)[]) {
  const seen = new SeenContexts();
  const faux = fauxModel(
    seen.wrap([
      ...turns.map((t) => (c: Context) => t(c)),
      (c: Context) => fauxAssistantMessage(`saw ${resultsSeen(c)}`),
    ]),
  );
  const { worker, taskQueue } = await testWorker(env, [echo, guarded]);
  const handle = await startAgentRun(env.client, {
    taskQueue,
    workflowId: uniqueId("ctx"),
    model: faux.getModel(),
    prompt: "go",
  });
  const { result, transcript } = await worker.runUntil(async () => ({
    result: await handle.result(),
    transcript: await handle.transcript(),
  }));
  return { result, transcript, seen: seen.calls };
}

const call = (name: string, text: string, id: string) => fauxToolCall(name, { text }, { id });

describe("a model that reuses tool-call ids", () => {
  it("two calls with the same id in one batch: each result reaches the model once, in order", async () => {
    const { result, transcript, seen } = await runScript([
      () => fauxAssistantMessage([call("echo", "A", "dup"), call("echo", "B", "dup")], { stopReason: "toolUse" }),
    ]);
    expect(result.stopReason).toBe("stop");
    expect(transcript.filter((m) => m.role === "toolResult").map(textOf)).toEqual(["echo:A", "echo:B"]);
    expect(textOf(result.messages.at(-1))).toBe("saw echo:A, echo:B");
    expect(contextMismatches(seen, transcript)).toEqual([]);
  });

  it("an id reused in a later turn for an unknown tool: the model sees the error, not the earlier output", async () => {
    const { result, transcript, seen } = await runScript([
      () => fauxAssistantMessage([call("echo", "A", "x")], { stopReason: "toolUse" }),
      () => fauxAssistantMessage([call("nope", "B", "x")], { stopReason: "toolUse" }),
    ]);
    expect(textOf(result.messages.at(-1))).toBe("saw echo:A, Tool nope not found");
    expect(contextMismatches(seen, transcript)).toEqual([]);
  });

  it("an id reused in a later turn for a denied call: the model sees the denial", async () => {
    const { result, transcript, seen } = await runScript([
      () => fauxAssistantMessage([call("echo", "A", "x")], { stopReason: "toolUse" }),
      () => fauxAssistantMessage([call("guarded", "B", "x")], { stopReason: "toolUse" }),
    ]);
    expect(textOf(result.messages.at(-1))).toBe("saw echo:A, Tool call denied: no approval within 50ms.");
    expect(contextMismatches(seen, transcript)).toEqual([]);
  });

  it("the same id in every turn, batches of two: every call saw the recorded context", async () => {
    const { result, transcript, seen } = await runScript(
      [1, 2, 3].map(
        (turn) => () =>
          fauxAssistantMessage([call("echo", `${turn}a`, "call_0"), call("echo", `${turn}b`, "call_0")], {
            stopReason: "toolUse",
          }),
      ),
    );
    expect(textOf(result.messages.at(-1))).toBe("saw echo:1a, echo:1b, echo:2a, echo:2b, echo:3a, echo:3b");
    expect(seen).toHaveLength(4);
    expect(contextMismatches(seen, transcript)).toEqual([]);
  });
});

describe("the context digest", () => {
  const messages: AgentMessage[] = [
    { role: "user", content: "héllo 🌍 \ud800", timestamp: 1 },
    {
      role: "toolResult",
      toolCallId: "a",
      toolName: "echo",
      content: [{ type: "text", text: "x".repeat(70) }],
      isError: false,
      timestamp: 2,
    },
  ];

  it("is the same in the workflow (plain JavaScript) and the worker (Node's SHA-256), whatever the key order", () => {
    // Every padding boundary (55/56 and 119/120 bytes), UTF-8 of 2-4 bytes, lone surrogates (U+FFFD, 3 bytes) at
    // either end and before a non-surrogate, and long texts before and after short ones.
    const lengths = [0, 1, 55, 56, 63, 64, 65, 119, 120, 128];
    const texts = [
      ...lengths.map((n) => "a".repeat(n)),
      "abc",
      "é🌍\udc00",
      "x\ud800",
      "\ud800x\udc00\ud83c",
      "z".repeat(100_000),
      "y".repeat(1_200_000),
      "b".repeat(56),
      "é".repeat(40_000) + "🌍".repeat(20_000),
      "c".repeat(3),
    ];
    for (const text of texts) {
      expect(sha256Hex(text)).toBe(createHash("sha256").update(text, "utf8").digest("hex"));
    }
    const reordered = messages.map((m) => Object.fromEntries(Object.entries(m).reverse())) as AgentMessage[];
    expect(workerContextDigest(reordered)).toBe(contextDigest(messages));
    expect(canonicalJson({ b: [1, undefined], a: undefined, c: "é" })).toBe('{"b":[1,null],"c":"é"}');
  });

  it("differs when any message differs, or messages move", () => {
    const changed = [messages[0], { ...messages[1], timestamp: 3 }] as AgentMessage[];
    expect(contextDigest(changed)).not.toBe(contextDigest(messages));
    expect(contextDigest([messages[1], messages[0]])).not.toBe(contextDigest(messages));
    expect(contextDigest(messages.slice(0, 1))).not.toBe(contextDigest(messages));
  });

  it("a worker never serves a cached reply or tool output the workflow did not record: it reads the recorded context", async () => {
    const run = { workflowId: "w", runId: "r" };
    const recorded: AgentMessage[] = [
      messages[0],
      {
        role: "assistant",
        content: [{ type: "text", text: "recorded reply" }],
        api: "faux",
        provider: "faux",
        model: "m",
        usage: {} as never,
        stopReason: "toolUse",
        timestamp: 5,
      },
      {
        role: "toolResult",
        toolCallId: "a",
        toolName: "echo",
        content: [{ type: "text", text: "recorded output" }],
        isError: false,
        timestamp: 6,
      },
    ];
    const queries: { offset: number; limit: number }[] = [];
    const client = {
      workflow: {
        getHandle: () => ({
          query: async (_q: unknown, page: { offset: number; limit: number }) => {
            queries.push(page);
            return {
              epoch: 0,
              total: recorded.length,
              messages: recorded.slice(page.offset, page.offset + page.limit),
            };
          },
        }),
      },
    };
    const cache = new ContextCache(() => client as never);
    // This worker's late attempts: its own reply, its own output of the same tool activity.
    cache.remember(run, 0, [
      messages[0],
      { ...recorded[1], content: [{ type: "text", text: "late reply" }] } as AgentMessage,
    ]);
    cache.rememberOutput(run, "tool-1-0-a", "echo", {
      result: { content: [{ type: "text", text: "late output" }] },
      isError: false,
    });
    const ref = {
      epoch: 0,
      base: 2,
      append: [{ ref: "toolResult" as const, activityId: "tool-1-0-a", toolCallId: "a", timestamp: 6 }],
      digest: contextDigest(recorded),
    };
    const why: string[] = [];
    expect(await cache.resolve(run, ref, (w) => why.push(w))).toEqual(recorded);
    expect(queries).toEqual([{ offset: 0, limit: 3 }]);
    expect(why).toHaveLength(1);
    expect(cache.stats.mismatches).toBe(1);
    // A context the workflow itself does not hold (a wrong digest) is never served.
    await expect(cache.resolve(run, { ...ref, digest: "0".repeat(64) })).rejects.toMatchObject({
      type: "ContextMismatch",
      nonRetryable: false,
    });
  });
});
