/** Brings the model's context under its budget before a call, or after the provider said it overflowed. */
import { ActivityFailure, log } from "@temporalio/workflow";
import type { Tool } from "@jai/ai";
import { compactContext } from "./activity-proxies.js";
import type { AgentMessage } from "../shared/contracts.js";
import { contextBudget, estimateTokens, shortenToolResults, structureProblem } from "./compaction.js";
import { wholeContextRef } from "./context-ref.js";
import type { RunContext } from "./run-context.js";
import { metrics } from "./metrics-sink.js";

/** The tools as the model is offered them (no worker-side settings), and the run features' (a final tool) last. */
export function modelTools({ setup, featureTools }: Pick<RunContext, "setup" | "featureTools">): Tool[] {
  const tools = setup.tools.map(({ name, description, parameters }) => ({ name, description, parameters }));
  return featureTools.length > 0 ? [...tools, ...featureTools] : tools;
}

/**
 * Compacts when the estimate is over budget ("estimate"), or unconditionally to
 * well under it ("overflow"). Returns whether the context changed: `false` at
 * once, not a promise, when it is under budget, which is nearly every turn
 * (every promise the workflow makes costs a replay a captured stack trace).
 * Every tool call keeps its result; workers see a new epoch and re-read the
 * context.
 */
export function fitContext(run: RunContext, reason: "estimate" | "overflow"): Promise<boolean> | false {
  const { input, setup } = run;
  const tools = modelTools(run);
  const estimate = (messages: AgentMessage[]) => estimateTokens(messages, input.systemPrompt, tools);
  const budget = contextBudget(input, setup.model);
  const used = estimate(run.state.conversation.context);
  if (reason === "estimate" && (budget === undefined || used <= budget)) return false;
  const target = Math.floor(Math.min(budget ?? used, used) * (reason === "overflow" ? 0.6 : 0.8));
  return compact(run, { used, target, estimate });
}

async function compact(
  { input, setup, state }: RunContext,
  { used, target, estimate }: { used: number; target: number; estimate: (messages: AgentMessage[]) => number },
): Promise<boolean> {
  let next: AgentMessage[] | undefined;
  if (input.compaction === "worker") {
    try {
      const compacted = await compactContext.executeWithOptions(
        { summary: `compact context · ${used} → ${target} tokens` },
        [{ context: wholeContextRef(state.conversation), budgetTokens: target, model: setup.model }],
      );
      const problem = structureProblem(compacted);
      if (problem) log.warn("worker compaction broke the message structure; using the default", { problem });
      else next = compacted;
    } catch (err) {
      if (!(err instanceof ActivityFailure)) throw err;
      log.warn("worker compaction failed; using the default", { error: err.cause?.message ?? err.message });
    }
  }
  if (!next) {
    const { context, shortened } = shortenToolResults(state.conversation.context, target, estimate);
    if (shortened === 0) return false;
    next = context;
  }
  // A new epoch; shortened results are no longer their activity's output.
  state.conversation.replaceContext(next);
  metrics.compacted(`${setup.model.provider}/${setup.model.id}`);
  state.publishDetails(`context compacted (${used} → ${estimate(next)} tokens)`);
  return true;
}
