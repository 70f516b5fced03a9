/** Pure unit tests: loop helpers, input validation, the failure classifier, summaries. No server. */
import { describe, expect, it } from "@jest/globals";
import { fauxAssistantMessage } from "@jai/ai";
import { classifyModelOutcome, keyEnvVar, redact, retryAfterMs, type CallFacts, type ModelOutcome } from "../src/activities/classify.js";
import { heartbeatIntervalMs } from "../src/activities/heartbeat.js";
import { capToolResult } from "../src/activities/caps.js";
import { normalizeToolResult } from "../src/activities/tool.js";
import { validateRunInput } from "../src/workflows/input.js";
import { modelSummary, runDetails, toolSummary } from "../src/workflows/summary.js";
import { runToolBatch } from "../src/workflows/tool-batch.js";
import { addUsage, emptyUsage } from "../src/workflows/usage.js";
import type { ToolExecutionMode } from "../src/types.js";
import { deferred } from "./helpers.js";

describe("runToolBatch", () => {
  /** Each call finishes when the test says so; the log shows what overlapped and what was reported when. */
  function harness(modes: ToolExecutionMode[]) {
    const log: string[] = [];
    const gates = modes.map(() => deferred());
    const reports: string[] = [];
    const done = runToolBatch(modes, {
      run: async (i) => {
        log.push(`start ${i}`);
        await gates[i].promise;
        log.push(`end ${i}`);
        return i * 10;
      },
      finished: (i, r) => void reports.push(`finished ${i}=${r}`),
      groupFinished: (indices, results) => void reports.push(`group ${indices.join(",")}=${results.join(",")}`),
    });
    const flush = () => new Promise((r) => setImmediate(r));
    return { log, gates, reports, done, flush };
  }

  it("starts parallel calls together, reports each as it finishes and the group, in source order, at the end", async () => {
    const h = harness(["parallel", "parallel", "parallel"]);
    await h.flush();
    expect(h.log).toEqual(["start 0", "start 1", "start 2"]);
    h.gates[2].resolve();
    await h.flush();
    h.gates[1].resolve();
    await h.flush();
    // Call 0 still running: 2 and 1 are reported finished, nothing enters the transcript yet.
    expect(h.reports).toEqual(["finished 2=20", "finished 1=10"]);
    h.gates[0].resolve();
    expect(await h.done).toEqual([0, 10, 20]);
    expect(h.reports).toEqual(["finished 2=20", "finished 1=10", "finished 0=0", "group 0,1,2=0,10,20"]);
  });

  it("runs a sequential call alone, as a group of its own: after the running ones, before the next ones", async () => {
    const h = harness(["parallel", "sequential", "parallel", "parallel"]);
    await h.flush();
    expect(h.log).toEqual(["start 0"]);
    h.gates[0].resolve();
    await h.flush();
    expect(h.log).toEqual(["start 0", "end 0", "start 1"]);
    expect(h.reports).toEqual(["finished 0=0", "group 0=0"]);
    h.gates[1].resolve();
    await h.flush();
    expect(h.log.slice(3)).toEqual(["end 1", "start 2", "start 3"]);
    expect(h.reports.slice(2)).toEqual(["finished 1=10", "group 1=10"]);
    h.gates[3].resolve();
    await h.flush();
    h.gates[2].resolve();
    expect(await h.done).toEqual([0, 10, 20, 30]);
    expect(h.reports.slice(4)).toEqual(["finished 3=30", "finished 2=20", "group 2,3=20,30"]);
  });

  it("reports an all-sequential batch call by call, as pi-agent-core's sequential mode", async () => {
    const h = harness(["sequential", "sequential"]);
    h.gates.forEach((g) => g.resolve());
    await h.done;
    expect(h.reports).toEqual(["finished 0=0", "group 0=0", "finished 1=10", "group 1=10"]);
  });

  it("handles an empty batch", async () => {
    expect(await runToolBatch([], { run: async () => 1, groupFinished: () => expect("no group").toBe("reported") })).toEqual([]);
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
    [{ ...ok, prompt: { role: "user", content: [{ text: "no type" }] } }, /"prompt.content\[0\]\.type" must be "text" or "image"/],
    [{ ...ok, systemPrompt: 3 }, /"systemPrompt"/],
    [{ ...ok, tools: "read" }, /"tools"/],
    [{ ...ok, maxTurns: 1.5 }, /"maxTurns"/],
    [{ ...ok, modelActivity: "fast" }, /"modelActivity"/],
  ])("rejects %j", (input, pattern) => {
    expect(validateRunInput(input)).toMatch(pattern);
  });
});

describe("classifyModelOutcome", () => {
  const failed = (errorMessage: string) => fauxAssistantMessage([], { stopReason: "error", errorMessage });
  const facts = (more: Partial<CallFacts> = {}): CallFacts => ({ provider: "anthropic", modelId: "claude-x", contextWindow: 200000, ...more });
  const retryType = (o: ModelOutcome) => ("retry" in o ? o.retry.type : undefined);
  const finalText = (o: ModelOutcome) => ("message" in o ? o.message.errorMessage : undefined);

  it("returns success and aborts as they are", () => {
    const ok = fauxAssistantMessage("fine");
    expect(classifyModelOutcome(ok, facts({ status: 200 }))).toEqual({ message: ok });
    expect("message" in classifyModelOutcome(fauxAssistantMessage([], { stopReason: "aborted" }), facts())).toBe(true);
  });

  it.each([
    [429, "ModelRateLimited"],
    [529, "ModelOverloaded"],
    [500, "ModelUnavailable"],
    [502, "ModelUnavailable"],
    [503, "ModelUnavailable"],
    [408, "ModelUnavailable"],
  ])("makes HTTP %i a retryable %s", (status, type) => {
    const outcome = classifyModelOutcome(failed(`${status} oops`), facts({ status }));
    expect(retryType(outcome)).toBe(type);
    expect("retry" in outcome && outcome.retry.nonRetryable).toBe(false);
    expect("retry" in outcome && outcome.retry.message).toContain(`HTTP ${status}`);
  });

  it("reads the status from the SDK's message when no response was recorded", () => {
    expect(retryType(classifyModelOutcome(failed("429 Too Many Requests"), facts()))).toBe("ModelRateLimited");
    expect(finalText(classifyModelOutcome(failed("400 bad field"), facts()))).toMatch(/rejected the request \(HTTP 400/);
  });

  it("honours retry-after and retry-after-ms", () => {
    const outcome = classifyModelOutcome(failed("slow down"), facts({ status: 429, headers: { "retry-after": "7" } }));
    expect("retry" in outcome && outcome.retry.nextRetryDelay).toBe(7000);
    expect(retryAfterMs({ "retry-after-ms": "1500", "retry-after": "9" })).toBe(1500);
    expect(retryAfterMs({ "retry-after": new Date(10_000).toUTCString() }, 4_000)).toBe(6000);
    expect(retryAfterMs({ "retry-after": "soon" })).toBeUndefined();
  });

  it("makes 401/403 name the provider and the env var, never the key", () => {
    const key = "sk-ant-SENTINEL-123456789";
    const text = finalText(classifyModelOutcome(failed(`401 invalid x-api-key ${key}`), facts({ status: 401, secrets: [key] })));
    expect(text).toMatch(/Authentication failed for provider "anthropic"/);
    expect(text).toContain("ANTHROPIC_API_KEY");
    expect(text).not.toContain("SENTINEL");
    expect(keyEnvVar("my-llm")).toBe("MY_LLM_API_KEY");
    expect(redact("Incorrect API key provided: sk-proj-abc123***wxyz")).toBe("Incorrect API key provided: [redacted key]");
  });

  it("ends the turn on 400 with the provider's message, on 404 naming the model, on context overflow clearly", () => {
    expect(finalText(classifyModelOutcome(failed("messages: field required"), facts({ status: 400 })))).toMatch(/anthropic\/claude-x rejected the request \(HTTP 400: messages: field required\)/);
    expect(finalText(classifyModelOutcome(failed("no such model"), facts({ status: 404 })))).toMatch(/Model "claude-x" not found at provider "anthropic"/);
    expect(finalText(classifyModelOutcome(failed("prompt is too long: 250000 tokens > 200000 maximum"), facts({ status: 400 })))).toMatch(
      /^Context overflow: the conversation no longer fits anthropic\/claude-x's context window \(200000 tokens\)/,
    );
  });

  it("retries streams cut or corrupted after a 200, and connections that never answered", () => {
    expect(retryType(classifyModelOutcome(failed("read ECONNRESET"), facts({ status: 200 })))).toBe("ModelStreamInterrupted");
    expect(retryType(classifyModelOutcome(failed("terminated"), facts({ status: 200 })))).toBe("ModelStreamInterrupted");
    expect(retryType(classifyModelOutcome(failed("Unexpected token } in JSON"), facts({ status: 200 })))).toBe("ModelStreamInterrupted");
    expect(retryType(classifyModelOutcome(failed("Overloaded"), facts({ status: 200 })))).toBe("ModelOverloaded");
    expect(retryType(classifyModelOutcome(failed("503 connection failed"), facts({ networkError: "fetch failed: ECONNREFUSED" })))).toBe("ModelUnavailable");
    // The fetch layer saw the body break even when the SDK's message says nothing useful.
    expect(retryType(classifyModelOutcome(failed("{}"), facts({ status: 200, bodyError: "terminated: UND_ERR_SOCKET" })))).toBe("ModelStreamInterrupted");
  });

  it("returns other errors as data", () => {
    expect(finalText(classifyModelOutcome(failed("something odd"), facts({ status: 200 })))).toBe("something odd");
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
  it("heartbeats at a third of the timeout, at most every second", () => {
    expect(heartbeatIntervalMs(undefined)).toBe(1000);
    expect(heartbeatIntervalMs(30000)).toBe(1000);
    expect(heartbeatIntervalMs(1500)).toBe(500);
    expect(heartbeatIntervalMs(10)).toBe(100);
  });
  it("makes tool results plain JSON and refuses malformed ones", () => {
    const result = normalizeToolResult("t", { content: [{ type: "text", text: "a" }], details: { when: new Date(0) }, terminate: false });
    expect(result).toEqual({ content: [{ type: "text", text: "a" }], details: { when: "1970-01-01T00:00:00.000Z" } });
    expect(() => normalizeToolResult("t", undefined)).toThrow(/Tool t returned an invalid result/);
    expect(() => normalizeToolResult("t", { content: [{ type: "audio" }] })).toThrow(/invalid content block/);
  });
});

describe("capToolResult", () => {
  const text = (t: string) => ({ type: "text" as const, text: t });
  it("keeps small results as they are", () => {
    const r = { content: [text("short")], details: { a: 1 } };
    expect(capToolResult(r)).toEqual(r);
  });
  it("cuts by lines and by bytes across blocks, with a note", () => {
    const lines = Array.from({ length: 10 }, (_, i) => `line ${i}`).join("\n");
    const out = capToolResult({ content: [text(lines)] }, { maxLines: 3 });
    expect(out.content[0]).toEqual(text("line 0\nline 1\nline 2"));
    expect((out.content[1] as { text: string }).text).toContain("showing the first 3 lines / 20 bytes of 10 lines / 69 bytes");
    const two = capToolResult({ content: [text("a".repeat(60)), text("b".repeat(60))] }, { maxBytes: 100 });
    expect(two.content.map((c) => (c.type === "text" ? c.text.length : 0)).slice(0, 2)).toEqual([60, 40]);
  });
  it("never splits a multi-byte character", () => {
    const out = capToolResult({ content: [text("é".repeat(100))] }, { maxBytes: 51 });
    expect((out.content[0] as { text: string }).text).toBe("é".repeat(25));
  });
  it("replaces oversized images and bounds details", () => {
    const out = capToolResult({ content: [{ type: "image", mimeType: "image/jpeg", data: "Z".repeat(2000) }], details: { big: "q".repeat(500) } }, { maxImageBytes: 1000, maxDetailsBytes: 100 });
    expect(out.content).toEqual([text("[Image omitted: image/jpeg of 2.0 KB exceeds the 1000 bytes limit for tool results.]")]);
    expect(out.details).toMatchObject({ truncated: true, bytes: 510 });
  });
});
