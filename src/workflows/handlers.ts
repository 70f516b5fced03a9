/**
 * Queries and updates of a run. Every update has a validator: bad input is
 * rejected before it is written to history, so it never touches the run.
 */
import { CancellationScope, condition, currentUpdateInfo, setHandler } from "@temporalio/workflow";
import type { UserMessage } from "@jai/ai";
import type { AgentRunInput } from "../types.js";
import {
  approveUpdate,
  closeUpdate,
  denyUpdate,
  followUpUpdate,
  modelContextQuery,
  promptAnswerUpdate,
  promptUpdate,
  type PromptUpdateResult,
  stateQuery,
  steerUpdate,
  transcriptQuery,
  type UserInput,
} from "./definitions.js";
import { BUDGETS, formatCount, jsonBytes } from "./budgets.js";
import { validateUserInput } from "./input.js";
import { toUserMessage, type RunState } from "./run-state.js";

/** Most bytes one query page carries: under Temporal's 512 KB payload warning, far under the 2 MB limit. */
const PAGE_BYTES = 400_000;

function page<T>(items: T[], offset = 0, limit?: number): T[] {
  const start = Math.max(0, offset);
  const end = limit === undefined ? items.length : Math.min(items.length, start + Math.max(0, limit));
  const out: T[] = [];
  let bytes = 0;
  for (let i = start; i < end; i++) {
    bytes += jsonBytes(items[i]);
    if (out.length > 0 && bytes > PAGE_BYTES) break;
    out.push(items[i]);
  }
  return out;
}

/** A well-formed message within its own budget and the queue's: what is accepted is always carried. */
function requireMessage(run: RunState, message: UserInput): void {
  const problem = validateUserInput(message);
  if (problem) throw new Error(`Invalid message: ${problem}`);
  const queued = run.queuedBytes();
  const size = jsonBytes(message);
  if (queued + size > BUDGETS.queuedBytes) {
    throw new Error(
      `Queue full: ${formatCount(queued)} bytes of messages are waiting and this one is ${formatCount(size)} bytes; a run holds at most ${formatCount(BUDGETS.queuedBytes)} bytes of queued messages. Send it once the run has taken them up.`,
    );
  }
}

function requireOpen(run: RunState): void {
  if (run.stopReason !== undefined && !run.waitingForPrompt) throw new Error(`The run has ended (${run.stopReason})`);
  if (run.waitingForPrompt)
    throw new Error(
      "The session is waiting for a prompt: send it with prompt(); steering and follow-ups apply while a prompt runs",
    );
}

/** Waits for a session prompt's answer; hands the caller over to the next run when this one continues as new first. */
async function awaitAnswer(run: RunState, id: number): Promise<PromptUpdateResult> {
  // Non-cancellable: a cancelled session still answers every prompt it accepted (as aborted).
  await CancellationScope.nonCancellable(() => condition(() => run.answers.some((a) => a.id === id) || run.continuing));
  const index = run.answers.findIndex((a) => a.id === id);
  if (index < 0) return { continuedAsNew: true, promptId: id };
  const [answer] = run.answers.splice(index, 1); // delivered: no later run needs to carry it
  return run.promptResult(answer);
}

function requireApproval(run: RunState, toolCallId: string): void {
  const wait = run.approvals.get(toolCallId);
  if (!wait || wait.decision) {
    const waiting = [...run.approvals.values()].filter((a) => !a.decision).map((a) => a.pending.toolCallId);
    throw new Error(
      `No tool call "${toolCallId}" is waiting for approval${waiting.length ? `; waiting: ${waiting.join(", ")}` : ""}`,
    );
  }
}

/** The message an update sent in, remembered as held by that update's history event. */
function fromUpdate(run: RunState, input: UserInput): UserMessage {
  const message = toUserMessage(input);
  const updateId = currentUpdateInfo()?.id;
  if (updateId !== undefined) run.fromInput.set(message, `update:${updateId}`);
  return message;
}

export function installHandlers(run: RunState, input: AgentRunInput): void {
  setHandler(stateQuery, () => run.snapshot());
  // Offsets count the whole chain; this run answers for its own part (earlier runs answer for theirs).
  setHandler(transcriptQuery, (options) => {
    const offset = Math.max(0, (options?.offset ?? 0) - run.earlierMessages);
    const skipped = Math.max(0, run.earlierMessages - (options?.offset ?? 0));
    const limit = options?.limit === undefined ? undefined : Math.max(0, options.limit - skipped);
    return page(run.transcript, offset, limit);
  });
  setHandler(modelContextQuery, ({ offset, limit }) => ({
    epoch: run.contextEpoch,
    total: run.context.length,
    messages: page(run.context, offset, limit),
  }));

  // Steering and follow-ups only differ in the queue they join (and when the loop reads it).
  for (const [update, queue] of [
    [steerUpdate, run.steering],
    [followUpUpdate, run.followUps],
  ] as const) {
    setHandler(
      update,
      (message) => {
        queue.push(fromUpdate(run, message));
        run.publishDetails();
        return { queued: queue.length };
      },
      { validator: (message) => (requireOpen(run), requireMessage(run, message)) },
    );
  }
  setHandler(
    promptUpdate,
    (message) => {
      const id = run.nextPromptId++;
      run.prompts.push({ id, message: fromUpdate(run, message) });
      run.publishDetails();
      return awaitAnswer(run, id);
    },
    {
      validator: (message) => {
        if (!input.session) throw new Error("This run is not a session: start it with `session: true` to send prompts");
        if (run.closed) throw new Error("The session is closed");
        if (run.stopReason !== undefined && !run.waitingForPrompt)
          throw new Error(`The session has ended (${run.stopReason})`);
        requireMessage(run, message);
      },
    },
  );
  setHandler(promptAnswerUpdate, (id) => awaitAnswer(run, id), {
    validator: (id) => {
      const known =
        run.answers.some((a) => a.id === id) || run.currentPrompt?.id === id || run.prompts.some((p) => p.id === id);
      if (!known)
        throw new Error(`No answer for prompt ${id} is waiting in this run (it was delivered already, or never sent)`);
    },
  });
  setHandler(
    closeUpdate,
    () => {
      run.closed = true;
    },
    {
      validator: () => {
        if (!input.session) throw new Error("This run is not a session");
        if (run.stopReason !== undefined && !run.waitingForPrompt)
          throw new Error(`The session has ended (${run.stopReason})`);
      },
    },
  );
  setHandler(
    approveUpdate,
    (toolCallId) => {
      run.approvals.get(toolCallId)!.decision = { approved: true };
    },
    { validator: (toolCallId) => requireApproval(run, toolCallId) },
  );
  setHandler(
    denyUpdate,
    (toolCallId, reason) => {
      run.approvals.get(toolCallId)!.decision = { approved: false, ...(reason ? { reason } : {}) };
    },
    {
      validator: (toolCallId, reason) => {
        requireApproval(run, toolCallId);
        if (typeof reason !== "string") throw new Error("Invalid reason: must be a string");
      },
    },
  );
}
