/** One-line texts for the Temporal UI, and usage sums. Pure. */
import { describe, expect, it } from "@jest/globals";
import { modelSummary, runDetails, toolSummary } from "../../src/shared/summary.js";
import { addUsage, emptyUsage } from "../../src/shared/usage.js";

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
    const usage = addUsage(emptyUsage(), {
      ...emptyUsage(),
      totalTokens: 1200,
      cost: { ...emptyUsage().cost, total: 0.0123 },
    });
    expect(runDetails("running", "streaming", 2, usage)).toBe(
      "**running** · streaming · turn 2 · 1200 tokens · $0.0123",
    );
  });
});
