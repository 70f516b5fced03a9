/**
 * Continue-as-new: a long run moves to a fresh history between turns (a
 * session between prompts, or between turns of a long prompt), carrying what
 * it needs. Same workflow id; the client follows the chain, so `result()` is
 * the chain's result and queries and updates reach the newest run.
 *
 * Two rules keep it safe. It never waits on a caller: update handlers that wait
 * (session prompts) hand their callers over to the next run, so "all handlers
 * finished" always comes. And the carry always fits: queued messages are
 * bounded at the door (see budgets.ts), the rest is sized to what is left.
 */
import { allHandlersFinished, condition, continueAsNew, log, workflowInfo } from "@temporalio/workflow";
import type { AgentRunInput } from "../contracts.js";
import type { AgentRunWorkflowInput, PromptLoopState } from "./wire.js";
import { BUDGETS, jsonBytes } from "./budgets.js";
import type { RunContext } from "./run-context.js";
import type { RunState } from "./run-state.js";

/** What a continued run's input says in place of the original prompt (the context carries it). */
export const CONTINUED_PROMPT = "[continued: the prompt is in the first run of this workflow]";

export function shouldContinueAsNew(input: AgentRunInput, state: RunState): boolean {
  const afterTurns = input.continueAsNew?.afterTurns;
  return workflowInfo().continueAsNewSuggested || (afterTurns !== undefined && state.turnsThisRun >= afterTurns);
}

/**
 * Continues as new once every update handler is done (waiting ones are handed
 * over to the next run first); returns only when the carry would not fit.
 */
export async function continueAsNewWith({ input, setup, state }: RunContext, loop?: PromptLoopState): Promise<void> {
  state.setContinuing(true);
  await condition(allHandlersFinished);
  // The carry gets what the next run's input has room for beside the rest of that input.
  const inputBytes = jsonBytes({ ...input, prompt: CONTINUED_PROMPT, continued: undefined });
  const carry = state.toCarry(setup, BUDGETS.carryBytes - inputBytes, loop);
  if (!carry) {
    state.setContinuing(false);
    log.warn(
      "continue-as-new skipped: the model context does not fit in a run's input even after shortening tool results",
    );
    return;
  }
  await continueAsNew<(input: AgentRunWorkflowInput) => Promise<unknown>>({
    ...input,
    prompt: CONTINUED_PROMPT,
    continued: carry,
  });
}
