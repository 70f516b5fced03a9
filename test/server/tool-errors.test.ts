/**
 * A tool's error is bounded like its result (issue 36, row 9): whatever a tool
 * throws becomes an error result the model sees, cut to the result limits with
 * a note, and the run goes on at once; a failure thrown out of the activity
 * carries a bounded message, stack, details and causes. Real server, faux model.
 */
import { describe, expect, it } from "@jest/globals";
import { ApplicationFailure } from "@temporalio/common";
import { fauxAssistantMessage, fauxToolCall, Type, type Context } from "@jai/ai";
import { startAgentRun } from "../../src/client/client.js";
import { boundFailure, capErrorText, DEFAULT_LIMITS } from "../../src/worker/activities/result-limits.js";
import type { AgentTool } from "../../src/shared/contracts.js";
import { fauxModel, testWorker, textOf, uniqueId, within, withServer } from "../support/helpers.js";

const env = withServer();

const bytes = (s: string) => Buffer.byteLength(s, "utf8");
const FIVE_MB = 5 * 1024 * 1024;

describe("capErrorText and boundFailure", () => {
  it("keeps a short error as it is and cuts a long one within the byte limit, note included", () => {
    expect(capErrorText("disk on fire")).toBe("disk on fire");
    const cut = capErrorText("é".repeat(FIVE_MB / 2), { maxBytes: 1000 });
    expect(bytes(cut)).toBeLessThanOrEqual(1000);
    expect(cut).toMatch(
      /^é+\n\[Error message truncated: showing the first 1 lines \/ \d+ bytes of 1 lines \/ 5\.0 MB\.\]$/,
    );
    const lines = capErrorText(Array.from({ length: 50 }, (_, i) => `line ${i}`).join("\n"), { maxLines: 10 });
    expect(lines.split("\n")).toHaveLength(10);
    expect(lines).toContain("showing the first 9 lines");
  });

  it("bounds message, stack, details and the cause chain of a thrown failure", () => {
    let inner: Error = new Error("root cause ".repeat(100_000));
    for (let i = 0; i < 6; i++) inner = new Error(`level ${i}`, { cause: inner });
    const failure = ApplicationFailure.create({
      message: "m".repeat(FIVE_MB),
      details: ["d".repeat(FIVE_MB)],
      cause: inner,
    });
    failure.stack = "s".repeat(FIVE_MB);
    const bounded = boundFailure(failure);
    expect(bounded).toBe(failure);
    expect(bytes(bounded.message)).toBeLessThanOrEqual(DEFAULT_LIMITS.maxBytes);
    expect(bounded.message).toContain("[Error message truncated");
    expect(bytes(bounded.stack!)).toBeLessThanOrEqual(17 * 1024);
    expect(bounded.details).toEqual([{ truncated: true, bytes: FIVE_MB + 4 }]);
    let causes = 0;
    for (let c = bounded.cause as Error | undefined; c; c = c.cause as Error | undefined) {
      causes++;
      expect(bytes(c.message)).toBeLessThanOrEqual(DEFAULT_LIMITS.maxBytes);
    }
    expect(causes).toBeLessThanOrEqual(4);
    expect(JSON.stringify({ m: bounded.message, s: bounded.stack, d: bounded.details }).length).toBeLessThan(200_000);
  });
});

describe("a tool that throws a huge error", () => {
  it("a 5 MB error message: the tool runs once, the model sees it cut with a note, and the run completes at once", async () => {
    const ran = { huge: 0, fastHuge: 0, weird: 0 };
    const huge: AgentTool = {
      name: "huge",
      description: "Throws a 5 MB error",
      parameters: Type.Object({}),
      execute: async () => {
        ran.huge++;
        throw new Error(`boom ${"x".repeat(FIVE_MB)}`);
      },
    };
    const fastHuge: AgentTool = {
      ...huge,
      name: "fast_huge",
      fast: true,
      execute: async () => {
        ran.fastHuge++;
        throw new Error(`fast boom ${"y\n".repeat(FIVE_MB / 2)}`);
      },
    };
    const weird: AgentTool = {
      ...huge,
      name: "weird",
      execute: async () => {
        ran.weird++;
        // A thrown value whose text cannot even be read (String() throws on it).
        throw Object.create(null);
      },
    };
    const faux = fauxModel([
      fauxAssistantMessage(
        [
          fauxToolCall("huge", {}, { id: "h1" }),
          fauxToolCall("fast_huge", {}, { id: "f1" }),
          fauxToolCall("weird", {}, { id: "w1" }),
        ],
        { stopReason: "toolUse" },
      ),
      (context: Context) =>
        fauxAssistantMessage(`saw ${context.messages.filter((m) => m.role === "toolResult").length} results`),
    ]);
    const { worker, taskQueue } = await testWorker(env, [huge, fastHuge, weird]);
    const handle = await startAgentRun(env.client, {
      taskQueue,
      workflowId: uniqueId("huge-error"),
      model: faux.getModel(),
      prompt: "go",
      tools: ["huge", "fast_huge", "weird"],
    });
    // Before the cap the failed completion was retried (3 runs, ~95 s); now nothing waits.
    const result = await worker.runUntil(within(handle.result(), 20_000, "the run to complete"));
    expect(result.stopReason).toBe("stop");
    expect(ran).toEqual({ huge: 1, fastHuge: 1, weird: 1 });
    expect(textOf(result.messages.at(-1))).toBe("saw 3 results");
    const results = result.messages.filter((m) => m.role === "toolResult");
    expect(results.map((m) => m.isError)).toEqual([true, true, true]);
    const [h, f, w] = results.map((m) => textOf(m));
    for (const text of [h, f]) {
      expect(bytes(text)).toBeLessThanOrEqual(DEFAULT_LIMITS.maxBytes);
      expect(text).toMatch(
        /\n\[Error message truncated: showing the first \d+ lines \/ [\d.]+ KB of \d+ lines \/ 5\.0 MB\.\]$/,
      );
    }
    expect(h.startsWith("boom xxx")).toBe(true);
    expect(f.startsWith("fast boom y\ny")).toBe(true);
    expect(f.split("\n").length).toBeLessThanOrEqual(DEFAULT_LIMITS.maxLines);
    expect(w).toBe("The tool threw a value that cannot be shown as text");
  });
});
