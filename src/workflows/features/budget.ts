/**
 * A run's budget (input `budget`, docs/budgets.md): spend counted in spend.ts; here its say in the loop (no model
 * call past a limit, no tool call past `maxToolCalls`), its result, snapshot and carry, and its sub-agents' shares. Patched: BUDGET_PATCH.
 */
import type { ToolResultMessage } from "@jai/ai";
import { modelTools } from "../context-fit.js";
import { estimateTokens } from "../compaction.js";
import { metrics } from "../metrics-sink.js";
import { BUDGET_PATCH, hasChange } from "../patches.js";
import { endCall } from "../prompt-loop.js";
import { featureInput } from "../../shared/feature-inputs.js";
import { Spend, worstCall } from "./spend.js";
import type { ChildGrant } from "../../shared/budget-checks.js";
import type { PendingToolCall } from "../../shared/contracts.js";
import { failedChildResult } from "../sub-agent.js";
import { errorOutput } from "../../shared/tool-output.js";
import type { RunContext } from "../run-context.js";
import type { RunState } from "../run-state.js";
import type { RunFeature, TurnFacts, TurnHooks } from "./feature.js";

export const budgetFeature: RunFeature = {
  ...featureInput("budget"),
  open(input) {
    // A continued run goes on with its chain's budget exactly when the chain carries a spend.
    const on = input.continued
      ? input.continued.spend !== undefined
      : input.budget !== undefined && hasChange(BUDGET_PATCH);
    if (!on) return undefined;
    const spend = new Spend();
    /** What each running sub-agent was granted, by its workflow id. */
    const grants = new Map<string, ChildGrant | undefined>();
    const shared = new WeakSet<PendingToolCall>();
    return {
      // A budget is the chain's: a continued run goes on with what the runs before it spent.
      start: (_state, input) => spend.start(input.budget, input.continued?.spend, Date.now()),
      turns: (run) => budgetTurns(run, spend),
      promptEnded: (state) => {
        if (state.stopReason === "budget" && spend.exceeded) metrics.budgetExceeded(spend.exceeded);
      },
      // A budget spent ends a session too: another prompt could only end the same way.
      endsSession: (state) => state.stopReason === "budget",
      result: (state) => budgetFields(state, spend),
      snapshot: (state) => budgetFields(state, spend),
      carry: () => (spend.carry() ? { spend: spend.carry() } : {}),
      // A child gets its share of what is left, held for it until it ends; its spend then counts here.
      childInput(run, { call, workflowId }) {
        // The batch's sub-agent calls not given a share yet, this one among them; by entry, not by call id (two
        // calls of a batch may carry the same id: the model chooses them).
        const waiting = run.state.tools.pending.filter(
          (p) => !shared.has(p) && run.setup.tools.some((t) => t.name === p.toolName && t.subAgent),
        );
        const own = waiting.find((p) => p.toolCallId === call.id);
        if (own) shared.add(own);
        const granted = spend.childBudget(waiting.length - (own ? 1 : 0), run.state.conversation.usage, Date.now());
        // By the child's workflow id: two calls of a batch may carry the same id (the model chooses them).
        grants.set(workflowId, granted?.grant);
        return granted ? { budget: granted.budget } : {};
      },
      childEnded(run, { workflowId }, ended) {
        // A child that failed (stopReason "error") spent too: its result is the failure's.
        const result = "result" in ended ? ended.result : failedChildResult(ended.error);
        if (!("result" in ended) && result?.usage) run.state.conversation.addUsage(result.usage);
        spend.childEnded(grants.get(workflowId), result?.spend?.toolCalls ?? 0);
        grants.delete(workflowId);
      },
    };
  },
};

/** What the run spent, and the limit that ended it. */
function budgetFields(state: RunState, spend: Spend) {
  return {
    ...(spend.exceeded !== undefined && state.stopReason === "budget" ? { budgetExceeded: spend.exceeded } : {}),
    ...(spend.active ? { spend: spend.report(state.conversation.usage, Date.now()) } : {}),
  };
}

/** The budget in one prompt's loop. */
function budgetTurns(run: RunContext, spend: Spend): TurnHooks {
  const { input, setup, state } = run;
  const { conversation } = state;
  const refusal = () => spend.explain("maxToolCalls", conversation.usage, Date.now());
  return {
    beforeModelCall() {
      const context = estimateTokens(conversation.context, input.systemPrompt, modelTools(run));
      // Any model of a fallback chain may take the call: the worst of them.
      const worst = [setup.model, ...(setup.fallbacks ?? [])]
        .map((model) => worstCall(model, context))
        .reduce((a, b) => ({ tokens: Math.max(a.tokens, b.tokens), costUsd: Math.max(a.costUsd, b.costUsd) }));
      const now = Date.now();
      const limit = spend.beforeCall(conversation.usage, now, worst);
      if (!limit) return undefined;
      return { stopReason: "budget", errorMessage: spend.explain(limit, conversation.usage, now, worst) };
    },
    limit: (calls) => spend.allowToolCalls(calls.length),
    // Calls past maxToolCalls are not run: each gets an error result, after those that ran; the prompt ends.
    afterTools(turn) {
      if (turn.held.length === 0) return undefined;
      const why = refusal();
      return { results: refuseCalls(state, turn, why), end: { stopReason: "budget", errorMessage: why } };
    },
  };
}

/** Tool calls the budget does not let run: each gets an error result (with its events), in the model's order. */
function refuseCalls(state: RunState, turn: TurnFacts, why: string): ToolResultMessage[] {
  const { emit } = turn;
  const out = errorOutput(why);
  return turn.held.map((call) => {
    emit({ type: "tool_execution_start", toolCallId: call.id, toolName: call.name, args: call.arguments });
    return endCall(state, call, out, emit);
  });
}
