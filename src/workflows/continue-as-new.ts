/**
 * Continue-as-new: a long run moves to a fresh history between turns (a
 * session between prompts), carrying what it needs. Same workflow id; the
 * client follows the chain, so `result()` is the chain's result and queries
 * reach the newest run.
 */
import { allHandlersFinished, condition, continueAsNew, log, workflowInfo } from "@temporalio/workflow";
import type { AgentMessage, AgentRunInput, ContinuedRun, PromptLoopState, RunSetup } from "../types.js";
import { shortenToolResults } from "./compaction.js";
import type { RunState } from "./run-state.js";

/** The carried context must leave room in the 2 MB input payload for the rest. */
const CONTEXT_BYTES = 1_000_000;
/** New messages carried for the final result; older ones are counted, not carried. */
const NEW_MESSAGES_BYTES = 400_000;

export function shouldContinueAsNew(input: AgentRunInput, run: RunState): boolean {
  const afterTurns = input.continueAsNew?.afterTurns;
  return workflowInfo().continueAsNewSuggested || (afterTurns !== undefined && run.turnsThisRun >= afterTurns);
}

const bytes = (messages: AgentMessage[]) => JSON.stringify(messages).length;

/** What the next run needs, or undefined when the context cannot be made to fit (the run then goes on as it is). */
export function buildCarry(setup: RunSetup, run: RunState, loop?: PromptLoopState): ContinuedRun | undefined {
  let context = run.context;
  if (bytes(context) > CONTEXT_BYTES) context = shortenToolResults(context, CONTEXT_BYTES / 4, (m) => Math.ceil(bytes(m) / 4)).context;
  if (bytes(context) > CONTEXT_BYTES) return undefined;
  // Keep the newest messages that fit, counting the rest as omitted.
  let keepFrom = run.newMessages.length;
  let size = 2;
  while (keepFrom > 0) {
    const next = JSON.stringify(run.newMessages[keepFrom - 1]).length + 1;
    if (size + next > NEW_MESSAGES_BYTES && keepFrom < run.newMessages.length) break;
    size += next;
    keepFrom--;
  }
  return {
    setup,
    context,
    earlierMessages: run.earlierMessages + run.transcript.length,
    newMessages: run.newMessages.slice(keepFrom),
    newMessagesOmitted: run.newMessagesOmitted + keepFrom,
    usage: run.usage,
    turn: run.turn,
    steering: run.steering,
    followUps: run.followUps,
    ...(loop ? { loop: { ...loop, start: Math.max(0, loop.start - keepFrom) } } : {}),
  };
}

/** Continues as new once every update handler is done; returns only when the carry would not fit. */
export async function continueAsNewWith(input: AgentRunInput, setup: RunSetup, run: RunState, loop?: PromptLoopState): Promise<void> {
  await condition(allHandlersFinished);
  const carry = buildCarry(setup, run, loop);
  if (!carry) {
    log.warn("continue-as-new skipped: the model context does not fit in a run's input even after shortening tool results");
    return;
  }
  await continueAsNew<(input: AgentRunInput) => Promise<unknown>>({ ...input, continued: carry });
}

/** The new run takes over the carried state. */
export function restoreCarry(run: RunState, carry: ContinuedRun): void {
  run.context = [...carry.context];
  run.earlierMessages = carry.earlierMessages;
  run.newMessages = [...carry.newMessages];
  run.newMessagesOmitted = carry.newMessagesOmitted;
  run.usage = carry.usage;
  run.turn = carry.turn;
  run.steering.push(...carry.steering); // in place: the update handlers hold these arrays
  run.followUps.push(...carry.followUps);
  run.previousRunId = workflowInfo().continuedFromExecutionRunId;
}
