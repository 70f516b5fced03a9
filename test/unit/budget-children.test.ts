/**
 * The budget feature's share for sub-agents (features/budget.ts, `childInput` / `childEnded`): what a child holds is
 * released when it ends, and two calls of one batch that carry the same id (the model chooses call ids) share what
 * is left evenly.
 */
import { describe, expect, it } from "@jest/globals";
import type { ToolCall } from "@jai/ai";
import { emptyUsage } from "../../src/shared/usage.js";
import { budgetFeature } from "../../src/workflows/features/budget.js";
import type { RunContext } from "../../src/workflows/run-context.js";
import type { AgentRunWorkflowInput } from "../../src/shared/wire.js";

const usage = emptyUsage();

describe("a budget's shares for sub-agents", () => {
  it("two children of one batch with the same call id get half each and each release their share", () => {
    // A continued run goes on with its chain's budget: no patch is asked (no workflow sandbox needed here).
    const input = {
      budget: { maxTokens: 1000, maxToolCalls: 10 },
      continued: { spend: { toolCalls: 0, startedAt: 0 } },
    } as unknown as AgentRunWorkflowInput;
    const feature = budgetFeature.open(input)!;
    feature.start!({} as never, input);
    const pending = [
      { toolCallId: "dup", toolName: "helper" },
      { toolCallId: "dup", toolName: "helper" },
    ];
    const run = {
      state: { tools: { pending }, conversation: { usage, addUsage() {} } },
      setup: { tools: [{ name: "helper", subAgent: {} }] },
    } as unknown as RunContext;
    const call: ToolCall = { type: "toolCall", id: "dup", name: "helper", arguments: {} };
    const a = { call, workflowId: "parent/sub-1-0" };
    const b = { call, workflowId: "parent/sub-1-1" };
    // Each gets half of what is left: the same id does not hide a twin from the share count.
    expect(feature.childInput!(run, a)).toEqual({ budget: { maxTokens: 500, maxToolCalls: 5 } });
    expect(feature.childInput!(run, b)).toEqual({ budget: { maxTokens: 500, maxToolCalls: 5 } });
    const ended = { result: { usage, spend: { toolCalls: 0 } } } as never;
    feature.childEnded!(run, a, ended);
    feature.childEnded!(run, b, ended);
    // Both shares are back: a later child gets all that is left, not the smallest budget that ends it at once.
    pending.splice(0, 2, { toolCallId: "next", toolName: "helper" });
    const later = feature.childInput!(run, { call: { ...call, id: "next" }, workflowId: "parent/sub-2-0" });
    expect(later).toEqual({ budget: { maxTokens: 1000, maxToolCalls: 10 } });
  });
});
