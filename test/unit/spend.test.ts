/** The budget's arithmetic (src/shared/spend.ts) and the classifier's "model gone", without a server. */
import { describe, expect, it } from "@jest/globals";
import type { Api, Model } from "@jai/ai";
import { budgetProblem } from "../../src/shared/budget-checks.js";
import { Spend, worstCall } from "../../src/workflows/features/spend.js";
import { classifyModelOutcome } from "../../src/worker/activities/classify.js";
import { emptyUsage } from "../../src/shared/usage.js";

const usage = (tokens: number, cost: number) => ({
  ...emptyUsage(),
  totalTokens: tokens,
  cost: { ...emptyUsage().cost, total: cost },
});
const model = { maxTokens: 1000, cost: { input: 3, output: 15, cacheRead: 0, cacheWrite: 0 } } as Model<Api>;

describe("spend", () => {
  it("the worst a call may cost is its context and the model's whole maxTokens, at the model's prices", () => {
    expect(worstCall(model, 2000)).toEqual({ tokens: 3000, costUsd: (2000 * 3 + 1000 * 15) / 1e6 });
  });

  it("checks before a call against what is spent plus the worst the call may cost", () => {
    const spend = new Spend();
    spend.start({ maxTokens: 10_000, maxCostUsd: 1 }, undefined, 0);
    expect(spend.beforeCall(usage(6_999, 0), 10, { tokens: 3_000, costUsd: 0.1 })).toBeUndefined();
    expect(spend.beforeCall(usage(7_001, 0), 10, { tokens: 3_000, costUsd: 0.1 })).toBe("maxTokens");
    expect(spend.beforeCall(usage(0, 0.95), 10, { tokens: 0, costUsd: 0.1 })).toBe("maxCostUsd");
    expect(spend.exceeded).toBe("maxCostUsd");
  });

  it("maxDuration counts from the chain's start, which continue-as-new carries", () => {
    const spend = new Spend();
    spend.start({ maxDuration: "1m" }, { toolCalls: 4, startedAt: 1_000 }, 50_000);
    expect(spend.beforeCall(usage(0, 0), 60_999, { tokens: 0, costUsd: 0 })).toBeUndefined();
    expect(spend.beforeCall(usage(0, 0), 61_000, { tokens: 0, costUsd: 0 })).toBe("maxDuration");
    expect(spend.report(usage(0, 0), 31_000)).toMatchObject({
      toolCalls: 4,
      elapsedMs: 30_000,
      left: { durationMs: 30_000 },
    });
  });

  it("lets the first calls of a batch run up to maxToolCalls", () => {
    const spend = new Spend();
    spend.start({ maxToolCalls: 5 }, undefined, 0);
    expect(spend.allowToolCalls(3)).toBe(3);
    expect(spend.allowToolCalls(3)).toBe(2);
    expect(spend.exceeded).toBe("maxToolCalls");
    expect(spend.carry()).toEqual({ toolCalls: 5, startedAt: 0 });
  });

  it("children of one batch share what is left, held for each until it ends: together they cannot pass it", () => {
    const spend = new Spend();
    spend.start({ maxToolCalls: 7, maxTokens: 1000, maxDuration: 60_000 }, undefined, 0);
    expect(spend.allowToolCalls(2)).toBe(2); // the two sub-agent calls themselves
    const a = spend.childBudget(1, usage(100, 0), 1000)!;
    expect(a.budget).toEqual({ maxTokens: 450, maxToolCalls: 2, maxDuration: 59_000 });
    const b = spend.childBudget(0, usage(100, 0), 1000)!;
    expect(b.budget).toEqual({ maxTokens: 450, maxToolCalls: 3, maxDuration: 59_000 });
    // A third child (say, of the next batch while these run) gets nothing of tokens: it ends at its first check.
    expect(spend.childBudget(0, usage(100, 0), 1000)!.budget).toMatchObject({ maxTokens: 1, maxToolCalls: 0 });
    spend.childEnded(a.grant, 2);
    spend.childEnded(b.grant, 3);
    expect(spend.toolCalls).toBe(7);
    // Both grants are released: a later child gets all that is left.
    expect(spend.childBudget(0, usage(100, 0), 1000)!.budget).toMatchObject({ maxTokens: 900 });
  });

  it("a run without a budget checks and carries nothing", () => {
    const spend = new Spend();
    spend.start(undefined, undefined, 0);
    expect(spend.active).toBe(false);
    expect(spend.allowToolCalls(50)).toBe(50);
    expect(spend.beforeCall(usage(1e9, 1e9), 1e12, { tokens: 1e9, costUsd: 1e9 })).toBeUndefined();
    expect(spend.carry()).toBeUndefined();
  });

  it("names the field of a bad budget", () => {
    expect(budgetProblem({ maxTokens: 1.5 })).toBe(`"budget.maxTokens" must be a positive integer`);
    expect(budgetProblem({ maxToolCalls: 0 })).toBeUndefined();
    expect(budgetProblem({ maxToolCalls: -1 })).toMatch(/non-negative integer/);
    expect(budgetProblem({ maxCostUsd: Infinity })).toMatch(/positive number/);
    expect(budgetProblem({ maxDuration: 0 })).toMatch(/positive duration/);
    expect(budgetProblem({ maxDuration: "10m", maxCostUsd: 2 })).toBeUndefined();
    expect(budgetProblem([])).toMatch(/must be an object/);
  });
});

describe("classifier: a model gone at its provider", () => {
  const failed = { role: "assistant", content: [], stopReason: "error", errorMessage: "404 not found" } as never;
  it("HTTP 404 and not_found types are marked gone (a chain's next model may take the call); others are not", () => {
    const facts = { provider: "openai", modelId: "gpt-x" };
    expect(classifyModelOutcome(failed, { ...facts, status: 404 })).toMatchObject({ gone: true });
    expect(
      classifyModelOutcome(failed, { ...facts, status: 400, providerError: { type: "not_found_error" } }),
    ).toMatchObject({ gone: true });
    expect(classifyModelOutcome(failed, { ...facts, status: 401 })).not.toHaveProperty("gone");
  });
});
