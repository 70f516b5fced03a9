/** Pure unit tests: loop helpers, input validation, the failure classifier, summaries. No server. */
import { describe, expect, it } from "@jest/globals";
import { fauxAssistantMessage } from "@jai/ai";
import { classifyModelFailure, retryAfterMs } from "../src/activities/classify.js";
import { heartbeatIntervalMs } from "../src/activities/heartbeat.js";
import { normalizeToolResult } from "../src/activities/tool.js";
import { validateRunInput } from "../src/workflows/input.js";
import { modelSummary, runDetails, toolSummary } from "../src/workflows/summary.js";
import { runToolBatch } from "../src/workflows/tool-batch.js";
import { addUsage, emptyUsage } from "../src/workflows/usage.js";
import type { ToolExecutionMode } from "../src/types.js";
import { deferred } from "./helpers.js";

describe("runToolBatch", () => {
  /** Each call finishes when the test says so; the log shows what overlapped. */
  function harness(modes: ToolExecutionMode[]) {
    const log: string[] = [];
    const gates = modes.map(() => deferred());
    const order: number[] = [];
    const done = runToolBatch(modes, {
      run: async (i) => {
        log.push(`start ${i}`);
        await gates[i].promise;
        log.push(`end ${i}`);
        return i * 10;
      },
      settledInOrder: (i) => void order.push(i),
    });
    const flush = () => new Promise((r) => setImmediate(r));
    return { log, gates, order, done, flush };
  }

  it("starts parallel calls together and reports them in source order", async () => {
    const h = harness(["parallel", "parallel", "parallel"]);
    await h.flush();
    expect(h.log).toEqual(["start 0", "start 1", "start 2"]);
    h.gates[2].resolve();
    h.gates[1].resolve();
    await h.flush();
    expect(h.order).toEqual([]); // call 0 still running: nothing may enter the transcript yet
    h.gates[0].resolve();
    expect(await h.done).toEqual([0, 10, 20]);
    expect(h.order).toEqual([0, 1, 2]);
  });

  it("runs a sequential call alone: after the running ones, before the next ones", async () => {
    const h = harness(["parallel", "sequential", "parallel", "parallel"]);
    await h.flush();
    expect(h.log).toEqual(["start 0"]);
    h.gates[0].resolve();
    await h.flush();
    expect(h.log).toEqual(["start 0", "end 0", "start 1"]);
    h.gates[1].resolve();
    await h.flush();
    expect(h.log.slice(3)).toEqual(["end 1", "start 2", "start 3"]);
    h.gates[3].resolve();
    h.gates[2].resolve();
    expect(await h.done).toEqual([0, 10, 20, 30]);
    expect(h.order).toEqual([0, 1, 2, 3]);
  });

  it("handles an empty batch", async () => {
    expect(await runToolBatch([], { run: async () => 1 })).toEqual([]);
  });
});

describe("validateRunInput", () => {
  const ok = { model: "anthropic/claude-sonnet-4-5", prompt: "hi" };
  it("accepts the documented shapes", () => {
    expect(validateRunInput(ok)).toBeUndefined();
    expect(validateRunInput({ ...ok, prompt: { role: "user", content: [{ type: "text", text: "x" }], timestamp: 1 } })).toBeUndefined();
    expect(validateRunInput({ ...ok, model: { id: "m", api: "a", provider: "p" }, tools: ["read"], toolExecution: "sequential", maxTurns: 3 })).toBeUndefined();
    expect(validateRunInput({ ...ok, model: "openrouter/anthropic/claude" })).toBeUndefined();
  });
  it.each([
    [null, /run input must be an object/],
    [{ prompt: "hi" }, /"model"/],
    [{ ...ok, model: "/x" }, /"model"/],
    [{ ...ok, model: { id: "m", api: "", provider: "p" } }, /"model.api"/],
    [{ ...ok, prompt: undefined }, /"prompt"/],
    [{ ...ok, prompt: [] }, /"prompt" must not be an empty list/],
    [{ ...ok, prompt: [{ role: "user", content: "a", timestamp: 1 }, fauxAssistantMessage("b")] }, /must not end with an assistant message/],
    [{ ...ok, prompt: { role: "assistant", content: [] } }, /"prompt.role" must be "user"/],
    [{ ...ok, prompt: [{ role: "toolResult", content: [] }] }, /"prompt\[0\].toolCallId"/],
    [{ ...ok, prompt: { role: "user", content: [{ text: "no type" }] } }, /"prompt.content\[0\]"/],
    [{ ...ok, systemPrompt: 3 }, /"systemPrompt"/],
    [{ ...ok, tools: "read" }, /"tools"/],
    [{ ...ok, maxTurns: 1.5 }, /"maxTurns"/],
    [{ ...ok, modelActivity: "fast" }, /"modelActivity"/],
  ])("rejects %j", (input, pattern) => {
    expect(validateRunInput(input)).toMatch(pattern);
  });
});

describe("classifyModelFailure", () => {
  const failed = (errorMessage: string) => fauxAssistantMessage([], { stopReason: "error", errorMessage });

  it("returns nothing for success, aborts and permanent errors", () => {
    expect(classifyModelFailure(fauxAssistantMessage("fine"), { status: 200, headers: {} })).toBeUndefined();
    expect(classifyModelFailure(fauxAssistantMessage([], { stopReason: "aborted" }), undefined)).toBeUndefined();
    expect(classifyModelFailure(failed("invalid x-api-key"), { status: 401, headers: {} })).toBeUndefined();
    expect(classifyModelFailure(failed("prompt is too long"), { status: 400, headers: {} })).toBeUndefined();
    expect(classifyModelFailure(failed("bad request"), undefined)).toBeUndefined();
  });

  it.each([
    [429, "ModelRateLimited"],
    [529, "ModelOverloaded"],
    [500, "ModelUnavailable"],
    [503, "ModelUnavailable"],
  ])("makes HTTP %i a retryable %s", (status, type) => {
    const failure = classifyModelFailure(failed("oops"), { status, headers: {} });
    expect(failure?.type).toBe(type);
    expect(failure?.nonRetryable).toBe(false);
    expect(failure?.message).toContain(`HTTP ${status}`);
  });

  it("honours retry-after", () => {
    const failure = classifyModelFailure(failed("slow down"), { status: 429, headers: { "retry-after": "7" } });
    expect(failure?.nextRetryDelay).toBe(7000);
    expect(retryAfterMs({ "retry-after": new Date(10_000).toUTCString() }, 4_000)).toBe(6000);
    expect(retryAfterMs({ "retry-after": "soon" })).toBeUndefined();
  });

  it("retries a stream cut by the network even after a 200", () => {
    expect(classifyModelFailure(failed("read ECONNRESET"), { status: 200, headers: {} })?.type).toBe("ModelStreamInterrupted");
    expect(classifyModelFailure(failed("fetch failed"), undefined)?.type).toBe("ModelStreamInterrupted");
    expect(classifyModelFailure(failed("529 Overloaded"), undefined)?.type).toBe("ModelOverloaded");
  });
});

describe("summaries and details", () => {
  it("shows a tool's single argument bare and several as key=value", () => {
    expect(toolSummary("read_file", { path: "src/a.ts" })).toBe("read_file src/a.ts");
    expect(toolSummary("edit", { path: "a.ts", text: "x\ny" })).toBe("edit path=a.ts text=x y");
    expect(toolSummary("ls", {})).toBe("ls");
    expect(toolSummary("write", { text: "z".repeat(500) }).length).toBeLessThanOrEqual(120);
  });
  it("names the turn and model", () => {
    expect(modelSummary(3, "anthropic", "claude-sonnet-4-5")).toBe("turn 3 · anthropic/claude-sonnet-4-5");
  });
  it("puts status, turn, tokens and cost in the run details", () => {
    const usage = addUsage(emptyUsage(), { ...emptyUsage(), totalTokens: 1200, cost: { ...emptyUsage().cost, total: 0.0123 } });
    expect(runDetails("running", "streaming", 2, usage)).toBe("**running** · streaming · turn 2 · 1200 tokens · $0.0123");
  });
});

describe("small helpers", () => {
  it("heartbeats at a third of the timeout, within bounds", () => {
    expect(heartbeatIntervalMs(undefined)).toBe(5000);
    expect(heartbeatIntervalMs(30000)).toBe(5000);
    expect(heartbeatIntervalMs(3000)).toBe(1000);
    expect(heartbeatIntervalMs(10)).toBe(100);
  });
  it("makes tool results plain JSON and refuses malformed ones", () => {
    const result = normalizeToolResult("t", { content: [{ type: "text", text: "a" }], details: { when: new Date(0) }, terminate: false });
    expect(result).toEqual({ content: [{ type: "text", text: "a" }], details: { when: "1970-01-01T00:00:00.000Z" } });
    expect(() => normalizeToolResult("t", undefined)).toThrow(/Tool t returned an invalid result/);
    expect(() => normalizeToolResult("t", { content: [{ type: "audio" }] })).toThrow(/invalid content block/);
  });
});
