/**
 * Continue-as-new: a long run moves to a fresh history between turns (a
 * session between prompts, or between turns of a long prompt), carrying what
 * it needs. Same workflow id; the client follows the chain, so `result()` is
 * the chain's result and queries and updates reach the newest run.
 *
 * Two rules keep it safe. It never waits on a caller: update handlers that wait
 * (session prompts) hand their callers over to the next run, so "all handlers
 * finished" always comes. And the carry always fits: queued messages are
 * bounded at the door (see shared/payload-limits.ts), the rest is sized to what is left.
 */
import { allHandlersFinished, condition, log, makeContinueAsNewFunc, workflowInfo } from "@temporalio/workflow";
import type { AgentRunInput } from "../shared/contracts.js";
import type { AgentRunWorkflowInput, PromptLoopState } from "../shared/wire.js";
import { BUDGETS, jsonBytes } from "../shared/payload-limits.js";
import type { RunContext } from "./run-context.js";
import type { RunState } from "./run-state.js";

/** What a continued run's input says in place of the original prompt (the context carries it). */
export const CONTINUED_PROMPT = "[continued: the prompt is in the first run of this workflow]";

/**
 * Whether the run continues as new here: between turns (the prompt loop asks), or a session between prompts (its
 * prompt loop has ended). Between prompts a session also moves on when its deployment made another version current
 * (`newVersionCurrent`), so that a session that lives for days does not hold its old version's workers; a run in the
 * middle of a prompt stays on its version until it ends or continues as new for its own reasons.
 */
export function shouldContinueAsNew(input: AgentRunInput, state: RunState): boolean {
  const afterTurns = input.continueAsNew?.afterTurns;
  if (workflowInfo().continueAsNewSuggested) return true;
  if (afterTurns !== undefined && state.turnsThisRun >= afterTurns) return true;
  return !state.loopOpen && newVersionCurrent();
}

/**
 * A pinned run (Worker Deployment Versioning) whose deployment has another current version: Temporal says so on the
 * workflow task (recorded in its WorkflowTaskStarted event, so a replay decides the same; server 1.31 and later;
 * 1.30 suggests continue-as-new instead, which every run then takes at its next turn). Always false on an unversioned
 * worker.
 */
function newVersionCurrent(): boolean {
  return workflowInfo().targetWorkerDeploymentVersionChanged === true;
}

/**
 * Continue-as-new onto the deployment's current version: a pinned run's next run starts on the version its task
 * queue's deployment has current (Temporal's upgrade on continue-as-new, server 1.30 and later), and is pinned there.
 * Without it a pinned chain would inherit its version forever. Unversioned runs and older servers ignore the option.
 */
function continueAsNewOnCurrentVersion(input: AgentRunWorkflowInput): Promise<never> {
  return makeContinueAsNewFunc<(input: AgentRunWorkflowInput) => Promise<unknown>>({
    initialVersioningBehavior: "AUTO_UPGRADE",
  })(input);
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
  await continueAsNewOnCurrentVersion({
    ...input,
    prompt: CONTINUED_PROMPT,
    continued: carry,
  });
}
