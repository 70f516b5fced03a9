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
import type {
  AgentMessage,
  AgentRunInput,
  AgentRunWorkflowInput,
  ContinuedRun,
  PromptLoopState,
  RunSetup,
} from "../types.js";
import { BUDGETS, jsonBytes } from "./budgets.js";
import { shortenToolResults } from "./compaction.js";
import type { RunState } from "./run-state.js";

/** New messages carried for the final result (older ones are counted, not carried). */
const NEW_MESSAGES_BYTES = 256_000;
/** Unclaimed prompt answers carried (each a few numbers); older ones are dropped. */
const MAX_ANSWERS = 50;
/** What a continued run's input says in place of the original prompt (the context carries it). */
export const CONTINUED_PROMPT = "[continued: the prompt is in the first run of this workflow]";

export function shouldContinueAsNew(input: AgentRunInput, run: RunState): boolean {
  const afterTurns = input.continueAsNew?.afterTurns;
  return workflowInfo().continueAsNewSuggested || (afterTurns !== undefined && run.turnsThisRun >= afterTurns);
}

/** The newest messages within `budget` bytes, and how many older ones were left out. */
function newest(messages: AgentMessage[], budget: number): { kept: AgentMessage[]; left: number } {
  let keepFrom = messages.length;
  let size = 2;
  while (keepFrom > 0) {
    const next = jsonBytes(messages[keepFrom - 1]) + 1;
    if (size + next > budget) break;
    size += next;
    keepFrom--;
  }
  return { kept: messages.slice(keepFrom), left: keepFrom };
}

/** What the next run needs, within the carry budget; undefined when the context cannot be made to fit (the run then goes on as it is). */
export function buildCarry(
  input: AgentRunInput,
  setup: RunSetup,
  run: RunState,
  loop?: PromptLoopState,
): ContinuedRun | undefined {
  const fixed: ContinuedRun = {
    setup,
    context: [],
    earlierMessages: run.earlierMessages + run.transcript.length,
    newMessages: [],
    newMessagesOmitted: 0,
    usage: run.usage,
    turn: run.turn,
    steering: run.steering,
    followUps: run.followUps,
    prompts: run.prompts,
    nextPromptId: run.nextPromptId,
    answers: run.answers.slice(-MAX_ANSWERS),
    closed: run.closed,
    // A session waiting for its next prompt: how its last prompt ended, should it be closed in the next run.
    ...(!loop && run.stopReason !== undefined ? { stopReason: run.stopReason } : {}),
    dropped: run.dropped.slice(-100),
    ...(loop ? { loop: { ...loop, pending: run.pendingInput } } : {}),
  };
  const inputBytes = jsonBytes({ ...input, prompt: CONTINUED_PROMPT, continued: undefined });
  let left = BUDGETS.carryBytes - inputBytes - jsonBytes(fixed) - 1000;
  const { kept, left: omitted } = newest(run.newMessages, Math.min(NEW_MESSAGES_BYTES, Math.max(0, left / 4)));
  left -= jsonBytes(kept);
  let context = run.context;
  if (jsonBytes(context) > left)
    context = shortenToolResults(context, left / 4, (m) => Math.ceil(jsonBytes(m) / 4)).context;
  if (jsonBytes(context) > left) return undefined;
  const carry: ContinuedRun = {
    ...fixed,
    context,
    newMessages: kept,
    newMessagesOmitted: run.newMessagesOmitted + omitted,
  };
  if (loop) carry.loop = { ...carry.loop!, start: Math.max(0, loop.start - omitted) };
  return carry;
}

/**
 * Continues as new once every update handler is done (waiting ones are handed
 * over to the next run first); returns only when the carry would not fit.
 */
export async function continueAsNewWith(
  input: AgentRunInput,
  setup: RunSetup,
  run: RunState,
  loop?: PromptLoopState,
): Promise<void> {
  run.continuing = true;
  await condition(allHandlersFinished);
  const carry = buildCarry(input, setup, run, loop);
  if (!carry) {
    run.continuing = false;
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

/** Queued messages this run's input carries, remembered as held there (see `UserInputRef`). */
function carried<T extends AgentMessage>(run: RunState, queue: string, messages: T[]): T[] {
  messages.forEach((m, i) => run.fromInput.set(m, `carried:${queue}:${i}`));
  return messages;
}

/** The new run takes over the carried state. */
export function restoreCarry(run: RunState, carry: ContinuedRun): void {
  run.context = [...carry.context];
  run.earlierMessages = carry.earlierMessages;
  run.newMessages = [...carry.newMessages];
  run.newMessagesOmitted = carry.newMessagesOmitted;
  run.usage = carry.usage;
  run.turn = carry.turn;
  // In place: the update handlers hold these arrays.
  run.steering.push(...carried(run, "steering", carry.steering));
  run.followUps.push(...carried(run, "followUps", carry.followUps));
  run.prompts.push(...(carry.prompts ?? []));
  carried(
    run,
    "prompts",
    (carry.prompts ?? []).map((p) => p.message),
  );
  run.pendingInput.push(...carried(run, "pending", carry.loop?.pending ?? []));
  run.answers.push(...(carry.answers ?? []));
  run.dropped.push(...(carry.dropped ?? []));
  run.nextPromptId = carry.nextPromptId ?? run.nextPromptId;
  run.closed = carry.closed ?? false;
  if (carry.loop?.promptId !== undefined)
    run.currentPrompt = { id: carry.loop.promptId, start: carry.loop.promptStart ?? 0 };
  run.previousRunId = workflowInfo().continuedFromExecutionRunId;
}
