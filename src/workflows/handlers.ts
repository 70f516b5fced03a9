/**
 * Queries and updates of a run. Every update has a validator: bad input is
 * rejected before it is written to history, so it never touches the run.
 */
import { CancellationScope, condition, currentUpdateInfo, setHandler } from "@temporalio/workflow";
import type { UserMessage } from "@jai/ai";
import type { AgentRunInput, ApproveOptions, SubmitToolResultOptions } from "../shared/contracts.js";
import {
  approveUpdate,
  closeUpdate,
  denyUpdate,
  followUpUpdate,
  modelContextQuery,
  promptAnswerUpdate,
  promptUpdate,
  type PromptUpdateResult,
  setApprovalPolicyUpdate,
  stateQuery,
  steerUpdate,
  submitToolResultUpdate,
  transcriptQuery,
  type UserInput,
} from "../shared/definitions.js";
import { BUDGETS, formatCount, jsonBytes, overBudget } from "../shared/payload-limits.js";
import { approvalPolicyProblem } from "../shared/approval-rules.js";
import { clientResultOutput, clientResultProblem } from "../shared/client-tool-checks.js";
import { validateUserInput } from "../shared/run-input.js";
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
function requireMessage(state: RunState, message: UserInput): void {
  const problem = validateUserInput(message);
  if (problem) throw new Error(`Invalid message: ${problem}`);
  const queued = state.inbox.queuedBytes();
  const size = jsonBytes(message);
  if (queued + size > BUDGETS.queuedBytes) {
    throw new Error(
      `Queue full: ${formatCount(queued)} bytes of messages are waiting and this one is ${formatCount(size)} bytes; a run holds at most ${formatCount(BUDGETS.queuedBytes)} bytes of queued messages. Send it once the run has taken them up.`,
    );
  }
}

function requireOpen(state: RunState): void {
  if (state.stopReason !== undefined && !state.waitingForPrompt)
    throw new Error(`The run has ended (${state.stopReason})`);
  if (state.waitingForPrompt)
    throw new Error(
      "The session is waiting for a prompt: send it with prompt(); steering and follow-ups apply while a prompt runs",
    );
}

/** Waits for a session prompt's answer; hands the caller over to the next run when this one continues as new first. */
async function awaitAnswer(state: RunState, id: number): Promise<PromptUpdateResult> {
  // Non-cancellable: a cancelled session still answers every prompt it accepted (as aborted).
  await CancellationScope.nonCancellable(() =>
    condition(() => state.inbox.answers.some((a) => a.id === id) || state.continuing),
  );
  const answer = state.inbox.takeAnswer(id); // delivered: no later run needs to carry it
  return answer ? state.promptResult(answer) : { continuedAsNew: true, promptId: id };
}

function requireApproval(state: RunState, toolCallId: string): void {
  if (!state.tools.waitingFor(toolCallId)) {
    const waiting = state.tools.waitingApprovals().map((a) => a.toolCallId);
    throw new Error(
      `No tool call "${toolCallId}" is waiting for approval${waiting.length ? `; waiting: ${waiting.join(", ")}` : ""}`,
    );
  }
}

/** The message an update sent in, remembered as held by that update's history event. */
function fromUpdate(state: RunState, input: UserInput): UserMessage {
  const message = toUserMessage(input);
  const updateId = currentUpdateInfo()?.id;
  if (updateId !== undefined) state.conversation.noteInput(message, `update:${updateId}`);
  return message;
}

export function installHandlers(state: RunState, input: AgentRunInput): void {
  setHandler(stateQuery, () => state.snapshot());
  // Offsets count the whole chain; this run answers for its own part (earlier runs answer for theirs).
  setHandler(transcriptQuery, (options) => {
    const { earlierMessages, transcript } = state.conversation;
    const offset = Math.max(0, (options?.offset ?? 0) - earlierMessages);
    const skipped = Math.max(0, earlierMessages - (options?.offset ?? 0));
    const limit = options?.limit === undefined ? undefined : Math.max(0, options.limit - skipped);
    return page(transcript, offset, limit);
  });
  setHandler(modelContextQuery, ({ offset, limit }) => ({
    epoch: state.conversation.contextEpoch,
    total: state.conversation.context.length,
    messages: page(state.conversation.context, offset, limit),
  }));

  // Steering and follow-ups only differ in the queue they join (and when the loop reads it).
  for (const [update, queue] of [
    [steerUpdate, (message: UserMessage) => state.inbox.steer(message)],
    [followUpUpdate, (message: UserMessage) => state.inbox.followUp(message)],
  ] as const) {
    setHandler(
      update,
      (message) => {
        const queued = queue(fromUpdate(state, message));
        state.publishDetails();
        return { queued };
      },
      { validator: (message) => (requireOpen(state), requireMessage(state, message)) },
    );
  }
  setHandler(
    promptUpdate,
    (message) => {
      const id = state.inbox.submitPrompt(fromUpdate(state, message));
      state.publishDetails();
      return awaitAnswer(state, id);
    },
    {
      validator: (message) => {
        if (!input.session) throw new Error("This run is not a session: start it with `session: true` to send prompts");
        if (state.inbox.closed) throw new Error("The session is closed");
        if (state.stopReason !== undefined && !state.waitingForPrompt)
          throw new Error(`The session has ended (${state.stopReason})`);
        requireMessage(state, message);
      },
    },
  );
  setHandler(promptAnswerUpdate, (id) => awaitAnswer(state, id), {
    validator: (id) => {
      if (!state.inbox.knowsPrompt(id))
        throw new Error(`No answer for prompt ${id} is waiting in this run (it was delivered already, or never sent)`);
    },
  });
  setHandler(closeUpdate, () => state.inbox.close(), {
    validator: () => {
      if (!input.session) throw new Error("This run is not a session");
      if (state.stopReason !== undefined && !state.waitingForPrompt)
        throw new Error(`The session has ended (${state.stopReason})`);
    },
  });
  setHandler(
    approveUpdate,
    (toolCallId: string, options?: ApproveOptions) => {
      if (options?.remember) state.tools.approveAndRemember(toolCallId);
      else state.tools.decide(toolCallId, { approved: true });
      if (options?.remember) state.publishDetails();
    },
    {
      validator: (toolCallId: string, options?: ApproveOptions) => {
        requireApproval(state, toolCallId);
        checkOptions(options, "remember", "an approve option");
      },
    },
  );
  setHandler(
    setApprovalPolicyUpdate,
    (policy) => {
      state.tools.setPolicy(policy);
      state.publishDetails();
      return policy;
    },
    {
      validator: (policy) => {
        if (state.stopReason !== undefined && !state.waitingForPrompt)
          throw new Error(`The run has ended (${state.stopReason})`);
        const problem = approvalPolicyProblem(policy, "policy");
        if (problem) throw new Error(`Invalid approval policy: ${problem}`);
        const size = overBudget("policy", jsonBytes(policy), BUDGETS.messageBytes);
        if (size) throw new Error(`Invalid approval policy: ${size}`);
      },
    },
  );
  setHandler(
    submitToolResultUpdate,
    (toolCallId: string, result: unknown, options?: SubmitToolResultOptions) =>
      state.tools.submitClientResult(toolCallId, clientResultOutput(result, options?.isError === true)),
    {
      validator: (toolCallId: string, result: unknown, options?: SubmitToolResultOptions) => {
        const wait = typeof toolCallId === "string" ? state.tools.clientWaitFor(toolCallId) : undefined;
        if (!wait) {
          const waiting = state.tools.waitingClientResults().map((w) => w.toolCallId);
          throw new Error(
            `No client tool call "${String(toolCallId)}" is waiting for a result${waiting.length ? `; waiting: ${waiting.join(", ")}` : ""}`,
          );
        }
        checkOptions(options, "isError", "a result option");
        const problem = clientResultProblem(wait.resultSchema, result, options?.isError === true);
        if (problem) throw new Error(`Invalid result for ${wait.pending.toolName}: ${problem}`);
      },
    },
  );
  setHandler(
    denyUpdate,
    (toolCallId, reason) => state.tools.decide(toolCallId, { approved: false, ...(reason ? { reason } : {}) }),
    {
      validator: (toolCallId, reason) => {
        requireApproval(state, toolCallId);
        if (typeof reason !== "string") throw new Error("Invalid reason: must be a string");
      },
    },
  );
}

/** An update's options: absent, or an object whose one known key (`key`, a boolean) is all it has. */
function checkOptions(options: unknown, key: string, what: string): void {
  if (options === undefined || options === null) return;
  if (typeof options !== "object" || Array.isArray(options))
    throw new Error(`Invalid options: must be an object { ${key}? }`);
  for (const k of Object.keys(options))
    if (k !== key) throw new Error(`Invalid options: "${k}" is not ${what} (${key})`);
  const value = (options as Record<string, unknown>)[key];
  if (value !== undefined && typeof value !== "boolean") throw new Error(`Invalid options: "${key}" must be a boolean`);
}
