/**
 * What a finished run looked like, read from the histories of its runs alone
 * (no worker): the transcript and state of the whole continue-as-new chain.
 *
 * The transcript is taken from the most exact record the chain holds: the
 * last run's result when it kept every message; else, run by run backwards,
 * the new messages the next run's input carried (or the result's), and the
 * model calls' inputs and tool activities' outputs for what neither kept.
 * Walking stops at the first carry that left nothing out.
 */
import type { Client } from "@temporalio/client";
import { runMessages, storyFromEncodedHistory, type RunStory } from "./history-transcript.js";
import type { AgentMessage, AgentRunState } from "./types.js";
import { addUsage } from "./workflows/usage.js";

export interface ClosedRunView {
  /** The chain's whole transcript. */
  transcript: AgentMessage[];
  /** False when some tool results had to be rebuilt from activity outputs and may differ from the recorded ones (timestamps, loop-made results). */
  exact: boolean;
  state: AgentRunState;
  /** The stories read, newest run first. */
  runs: RunStory[];
}

/** Reads one run's history (the newest when runId is undefined). */
export async function readStory(client: Client, workflowId: string, runId?: string): Promise<RunStory> {
  const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  const story = await storyFromEncodedHistory(history, client.options.loadedDataConverter);
  if (!story.input) throw new Error(`Workflow ${workflowId}${runId ? ` run ${runId}` : ""} has no agent run input in its history`);
  return story;
}

const seedOf = (story: RunStory): AgentMessage[] => {
  const prompt = story.input?.prompt;
  return Array.isArray(prompt) ? prompt : [];
};

/** Transcript messages of the whole chain, when the last run's result says (undefined: it has no result). */
function chainTotal(last: RunStory): number | undefined {
  const r = last.result;
  return r ? seedOf(last).length + (r.messagesOmitted ?? 0) + r.messages.length : undefined;
}

/**
 * One run's own messages. `after` is the chain's newest new messages at the
 * end of this run (the next run's carry, or the result), `count` how many
 * messages this run added to the transcript, when known.
 */
function ownMessages(story: RunStory, after: AgentMessage[] | undefined, count: number | undefined): { messages: AgentMessage[]; exact: boolean } {
  const carried = story.input?.continued;
  const seed = carried ? [] : seedOf(story);
  if (after && count !== undefined) {
    const fresh = count - seed.length;
    if (fresh === 0) return { messages: seed, exact: true };
    if (fresh > 0 && after.length >= fresh) return { messages: [...seed, ...after.slice(-fresh)], exact: true };
  }
  const walked = runMessages(story);
  let { messages } = walked;
  let tailExact = walked.tailExact;
  // The newest messages are known exactly; they replace the rebuilt tail.
  if (after && after.length > 0 && messages.length > seed.length) {
    const n = Math.min(after.length, messages.length - seed.length);
    messages = [...messages.slice(0, messages.length - n), ...after.slice(-n)];
    if (messages.length - n <= walked.tailFrom) tailExact = true;
  }
  const exact = walked.exact && tailExact && (count === undefined || messages.length === count);
  return { messages, exact };
}

/** The transcript and state of a finished run's chain (workflowId's newest run, or runId). */
export async function closedRunView(client: Client, workflowId: string, runId?: string): Promise<ClosedRunView> {
  const last = await readStory(client, workflowId, runId);
  const total = chainTotal(last);
  const runs = [last];
  let transcript: AgentMessage[];
  let exact = true;
  if (last.result && last.result.messagesOmitted === undefined) {
    transcript = [...seedOf(last), ...last.result.messages];
  } else {
    const parts: AgentMessage[][] = [];
    let story = last;
    let after = last.result?.messages;
    let count = total !== undefined ? total - (last.input?.continued?.earlierMessages ?? 0) : undefined;
    for (;;) {
      const own = ownMessages(story, after, count);
      parts.unshift(own.messages);
      exact &&= own.exact;
      const carry = story.input?.continued;
      if (!carry) break;
      if (carry.newMessagesOmitted === 0) {
        parts.unshift([...seedOf(story), ...carry.newMessages]);
        break;
      }
      if (!story.previousRunId) throw new Error(`Run ${story.runId} of ${workflowId} continued from a run it does not name`);
      const previous = await readStory(client, workflowId, story.previousRunId);
      runs.push(previous);
      after = carry.newMessages;
      count = carry.earlierMessages - (previous.input?.continued?.earlierMessages ?? 0);
      story = previous;
    }
    transcript = parts.flat();
  }
  return { transcript, exact, state: closedRunState(last, transcript.length), runs };
}

/** The state query's answer for a finished run, from its last run's history. */
export function closedRunState(last: RunStory, messageCount: number): AgentRunState {
  const { result } = last;
  const carry = last.input?.continued;
  let status: AgentRunState["status"] = last.status === "completed" ? "completed" : last.status === "cancelled" ? "cancelled" : "failed";
  if (result?.stopReason === "error") status = "failed";
  if (result?.stopReason === "aborted") status = "cancelled";
  const replies = last.steps.filter((s) => s.kind === "reply").length;
  return {
    status,
    phase: "done",
    turn: result?.turns ?? (carry?.turn ?? 0) + replies,
    usage: result?.usage ?? (carry ? addUsage(carry.usage, last.usage) : last.usage),
    pendingToolCalls: [],
    pendingApprovals: [],
    queuedSteering: 0,
    queuedFollowUps: 0,
    messageCount,
    earlierMessages: carry?.earlierMessages ?? 0,
    ...(last.previousRunId ? { previousRunId: last.previousRunId } : {}),
    stopReason: result?.stopReason,
    errorMessage: result?.errorMessage ?? last.failure,
    // Nothing stays queued at the end: what was not processed is in the result's `dropped`.
    ...(result?.dropped ? { dropped: result.dropped } : {}),
  };
}

/** The state of a finished run without rebuilding its transcript when the result says how long it is. */
export async function closedRunStateOnly(client: Client, workflowId: string, runId?: string): Promise<AgentRunState> {
  const last = await readStory(client, workflowId, runId);
  const total = chainTotal(last);
  if (total !== undefined) return closedRunState(last, total);
  return (await closedRunView(client, workflowId, runId)).state;
}
