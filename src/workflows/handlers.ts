/**
 * Queries and updates of a run. Every update has a validator: bad input is
 * rejected before it is written to history, so it never touches the run.
 */
import { condition, setHandler } from "@temporalio/workflow";
import type { AgentRunInput } from "../types.js";
import {
  approveUpdate,
  closeUpdate,
  denyUpdate,
  followUpUpdate,
  modelContextQuery,
  promptUpdate,
  stateQuery,
  steerUpdate,
  transcriptQuery,
  type UserInput,
} from "./definitions.js";
import { validateUserInput } from "./input.js";
import { toUserMessage, type QueuedPrompt, type RunState } from "./run-state.js";

/** Most bytes one query page carries: under Temporal's 512 KB payload warning, far under the 2 MB limit. */
const PAGE_BYTES = 400_000;

function page<T>(items: T[], offset = 0, limit?: number): T[] {
  const start = Math.max(0, offset);
  const end = limit === undefined ? items.length : Math.min(items.length, start + Math.max(0, limit));
  const out: T[] = [];
  let bytes = 0;
  for (let i = start; i < end; i++) {
    bytes += JSON.stringify(items[i]).length;
    if (out.length > 0 && bytes > PAGE_BYTES) break;
    out.push(items[i]);
  }
  return out;
}

function requireMessage(message: UserInput): void {
  const problem = validateUserInput(message);
  if (problem) throw new Error(`Invalid message: ${problem}`);
}

function requireOpen(run: RunState): void {
  if (run.stopReason !== undefined && !run.waitingForPrompt) throw new Error("The run has ended");
}

function requireApproval(run: RunState, toolCallId: string): void {
  const wait = run.approvals.get(toolCallId);
  if (!wait || wait.decision) {
    const waiting = [...run.approvals.values()].filter((a) => !a.decision).map((a) => a.pending.toolCallId);
    throw new Error(`No tool call "${toolCallId}" is waiting for approval${waiting.length ? `; waiting: ${waiting.join(", ")}` : ""}`);
  }
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
  setHandler(modelContextQuery, ({ offset, limit }) => ({ epoch: run.contextEpoch, total: run.context.length, messages: page(run.context, offset, limit) }));

  // Steering and follow-ups only differ in the queue they join (and when the loop reads it).
  for (const [update, queue] of [
    [steerUpdate, run.steering],
    [followUpUpdate, run.followUps],
  ] as const) {
    setHandler(
      update,
      (message) => {
        queue.push(toUserMessage(message));
        run.publishDetails();
        return { queued: queue.length };
      },
      { validator: (message) => (requireOpen(run), requireMessage(message)) },
    );
  }
  setHandler(
    promptUpdate,
    async (message) => {
      const queued: QueuedPrompt = { id: run.nextPromptId++, message: toUserMessage(message) };
      run.prompts.push(queued);
      await condition(() => queued.result !== undefined);
      return queued.result!;
    },
    {
      validator: (message) => {
        if (!input.session) throw new Error("This run is not a session: start it with `session: true` to send prompts");
        if (run.closed || (run.stopReason !== undefined && !run.waitingForPrompt)) throw new Error("The session has ended");
        requireMessage(message);
      },
    },
  );
  setHandler(
    closeUpdate,
    () => {
      run.closed = true;
    },
    {
      validator: () => {
        if (!input.session) throw new Error("This run is not a session");
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
