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
import { runMessages, storyFromEncodedHistory, type RunStory } from "./history-story.js";
import type { AgentMessage, AgentRunState } from "../shared/contracts.js";
import { addUsage } from "../shared/usage.js";

export interface ClosedRunView {
  /** The chain's whole transcript. */
  transcript: AgentMessage[];
  /** False when some tool results had to be rebuilt from activity outputs and may differ from the recorded ones (timestamps, loop-made results). */
  exact: boolean;
  state: AgentRunState;
  /** The stories read, newest run first (of runs whose carry was all that was needed, only the first event: input and links). */
  runs: RunStory[];
}

/** Reads one run's history (the newest when runId is undefined). */
export async function readStory(client: Client, workflowId: string, runId?: string): Promise<RunStory> {
  const history = await client.workflow.getHandle(workflowId, runId).fetchHistory();
  const story = await storyFromEncodedHistory(history, client.options.loadedDataConverter);
  if (!story.input)
    throw new Error(`Workflow ${workflowId}${runId ? ` run ${runId}` : ""} has no agent run input in its history`);
  return story;
}

/** Every run of the chain that ends at workflowId's newest run (or runId), oldest first: what `npm run show` prints. */
export async function readChain(client: Client, workflowId: string, runId?: string): Promise<RunStory[]> {
  const last = await readStory(client, workflowId, runId);
  const ids = last.previousRunId ? await chainRunIds(client, workflowId, last) : undefined;
  if (ids) {
    const stories = [
      ...(await pooled(ids.slice(0, -1), FETCH_CONCURRENCY, (id) => readStory(client, workflowId, id))),
      last,
    ];
    if (stories.every((story, i) => i === 0 || story.previousRunId === ids[i - 1])) return stories;
  }
  const chain: RunStory[] = [last];
  while (chain[0].previousRunId) chain.unshift(await readStory(client, workflowId, chain[0].previousRunId));
  return chain;
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
function ownMessages(
  story: RunStory,
  after: AgentMessage[] | undefined,
  count: number | undefined,
): { messages: AgentMessage[]; exact: boolean } {
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
  if (
    !(last.result && last.result.messagesOmitted === undefined) &&
    last.input?.continued &&
    chainTotal(last) !== undefined
  ) {
    const fast = await windowedView(client, workflowId, last).catch(() => undefined);
    if (fast) return { ...fast, state: closedRunState(last, fast.transcript.length) };
  }
  return linkedView(client, workflowId, last);
}

/** The chain read run by run along the continue-as-new links, back to the first carry that left nothing out. */
async function linkedView(client: Client, workflowId: string, last: RunStory): Promise<ClosedRunView> {
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
      if (!story.previousRunId)
        throw new Error(`Run ${story.runId} of ${workflowId} continued from a run it does not name`);
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
  let status: AgentRunState["status"] =
    last.status === "completed" ? "completed" : last.status === "cancelled" ? "cancelled" : "failed";
  if (result?.stopReason === "error") status = "failed";
  if (result?.stopReason === "aborted") status = "cancelled";
  const replies = last.steps.filter((s) => s.kind === "reply").length;
  // The floor is the chain's first input's, which every continued run's input repeats.
  const floor = Array.isArray(last.input?.approvalPolicyFloor) ? last.input.approvalPolicyFloor : [];
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
    // The approvals as the last run left them, as the live state shows them (run-state.ts snapshot()).
    ...(last.approvals?.policy !== undefined ? { approvalPolicy: last.approvals.policy } : {}),
    ...(last.approvals?.remembered.length ? { rememberedTools: [...last.approvals.remembered] } : {}),
    ...(floor.length > 0 ? { approvalPolicyFloor: floor } : {}),
    ...(result?.spend ? { spend: result.spend } : {}),
    ...(result?.budgetExceeded ? { budgetExceeded: result.budgetExceeded } : {}),
    ...(result?.output !== undefined ? { output: result.output } : {}),
  };
}

/** The state of a finished run without rebuilding its transcript when the result says how long it is. */
export async function closedRunStateOnly(client: Client, workflowId: string, runId?: string): Promise<AgentRunState> {
  const last = await readStory(client, workflowId, runId);
  const total = chainTotal(last);
  if (total !== undefined) return closedRunState(last, total);
  return (await closedRunView(client, workflowId, runId)).state;
}

/** The visibility list or a history disagrees with the chain's links: the caller walks the links instead. */
class ChainMismatch extends Error {}

/** What a run's first event says: its input and its place in the chain (the rest of its history is not fetched). */
async function readStart(client: Client, workflowId: string, runId: string): Promise<RunStory> {
  const { namespace } = client.options;
  const response = await client.workflowService.getWorkflowExecutionHistory({
    namespace,
    execution: { workflowId, runId },
    maximumPageSize: 1,
  });
  const first = response.history?.events?.[0];
  const story = await storyFromEncodedHistory({ events: first ? [first] : [] }, client.options.loadedDataConverter);
  if (!story.input) throw new Error(`Workflow ${workflowId} run ${runId} has no agent run input in its history`);
  return story;
}

/** The chain's run ids, oldest first, from visibility; undefined when the list does not (yet) hold the chain as its links say. */
async function chainRunIds(client: Client, workflowId: string, last: RunStory): Promise<string[] | undefined> {
  const found: { runId: string; start: number }[] = [];
  for await (const info of client.workflow.list({ query: `WorkflowId = ${JSON.stringify(workflowId)}` })) {
    found.push({ runId: info.runId, start: info.startTime.getTime() });
  }
  found.sort((a, b) => a.start - b.start);
  const ids = found.map((f) => f.runId);
  const end = ids.indexOf(last.runId ?? "");
  const begin = ids.indexOf(last.firstRunId ?? "");
  if (end < 1 || begin < 0 || begin >= end || ids[end - 1] !== last.previousRunId) return undefined;
  return ids.slice(begin, end + 1);
}

/** Runs `work` over `items`, at most `limit` at a time. */
async function pooled<T, R>(items: T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  const lane = async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await work(items[i]);
    }
  };
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane));
  return out;
}

const FETCH_CONCURRENCY = 6;

/**
 * The chain's transcript from as few histories as possible. Every continued
 * run's input carries the chain's newest messages, at known positions
 * ([earlierMessages - newMessages.length, earlierMessages)), so a few carries
 * spaced along the chain cover it; only the first events of those runs are
 * fetched, in parallel, at run indexes guessed from the visibility list and
 * checked against what each history says. Where no carry reaches, the run
 * holding the gap is rebuilt from its whole history, as the linked walk does.
 * Undefined when the list is incomplete (visibility lags just after a run ends).
 */
async function windowedView(
  client: Client,
  workflowId: string,
  last: RunStory,
): Promise<Omit<ClosedRunView, "state"> | undefined> {
  const ids = await chainRunIds(client, workflowId, last);
  if (!ids) return undefined;
  const lastCarry = last.input!.continued!;
  const total = chainTotal(last)!;
  const n = ids.length - 1; // the last run's index
  // Transcript positions: the seed (the first run's array prompt) comes first, then the chain's new messages.
  const seedLength = lastCarry.earlierMessages - lastCarry.newMessages.length - lastCarry.newMessagesOmitted;
  const starts = new Map<number, RunStory>([[n, last]]);
  const earlier = (i: number): number | undefined => (i === 0 ? 0 : starts.get(i)?.input?.continued?.earlierMessages);
  const fetchStarts = async (indexes: number[]) => {
    const wanted = [...new Set(indexes)].filter((i) => i > 0 && i < n && !starts.has(i));
    const got = await pooled(wanted, FETCH_CONCURRENCY, (i) => readStart(client, workflowId, ids[i]));
    got.forEach((story, k) => {
      if (story.firstRunId !== last.firstRunId || !story.input?.continued) throw new ChainMismatch();
      starts.set(wanted[k], story);
    });
    // Positions grow along the chain; anything else means the list's order is not the chain's.
    const known = [...starts.keys()].sort((a, b) => a - b);
    for (let k = 1; k < known.length; k++) if (earlier(known[k])! < earlier(known[k - 1])!) throw new ChainMismatch();
  };

  const own = ownMessages(last, last.result?.messages, total - lastCarry.earlierMessages);
  const parts: AgentMessage[][] = [own.messages];
  let exact = own.exact;
  const runs: RunStory[] = [last];
  let frontier = lastCarry.earlierMessages; // positions [frontier, total) are known
  let windowLength = Math.max(1, lastCarry.newMessages.length);

  /** Predicted index of the first run whose earlierMessages reach `position`, between the nearest known runs. */
  const predict = (position: number): number => {
    const known = [0, ...[...starts.keys()].sort((a, b) => a - b)];
    let lo = 0;
    let hi = n;
    for (const i of known) {
      if (earlier(i)! < position) lo = Math.max(lo, i);
      else hi = Math.min(hi, i);
    }
    const eLo = earlier(lo)!;
    const eHi = earlier(hi)!;
    if (hi - lo <= 1 || eHi <= eLo) return hi;
    return Math.min(hi, Math.max(lo + 1, lo + Math.ceil(((position - eLo) / (eHi - eLo)) * (hi - lo))));
  };

  while (frontier > seedLength) {
    // The known carry reaching furthest back past the frontier.
    let best: RunStory | undefined;
    for (const story of starts.values()) {
      const c = story.input!.continued!;
      if (c.earlierMessages >= frontier && c.earlierMessages - c.newMessages.length < frontier) {
        if (
          !best ||
          c.earlierMessages - c.newMessages.length <
            best.input!.continued!.earlierMessages - best.input!.continued!.newMessages.length
        )
          best = story;
      }
    }
    if (best) {
      const c = best.input!.continued!;
      const from = Math.max(seedLength, c.earlierMessages - c.newMessages.length);
      parts.unshift(
        c.newMessages.slice(
          from - (c.earlierMessages - c.newMessages.length),
          frontier - (c.earlierMessages - c.newMessages.length),
        ),
      );
      frontier = from;
      windowLength = Math.max(1, c.newMessages.length);
      continue;
    }
    // No known carry reaches: the runs around the frontier, known or to fetch.
    const next = predict(frontier);
    const before = next - 1;
    if (starts.has(next) && (before === 0 || starts.has(before)) && earlier(before)! < frontier) {
      // Run `before` added the messages at the frontier and no carry kept them: rebuild it from its whole history.
      const holder = starts.get(next)!;
      if (holder.previousRunId !== ids[before]) throw new ChainMismatch();
      const story = await readStory(client, workflowId, ids[before]);
      runs.push(story);
      const mine = ownMessages(
        story,
        holder.input!.continued!.newMessages,
        holder.input!.continued!.earlierMessages - earlier(before)!,
      );
      const begin = earlier(before)!;
      parts.unshift(mine.messages.slice(0, frontier - begin));
      exact &&= mine.exact;
      frontier = begin;
      continue;
    }
    // Fetch a run a little past the frontier (its carry then reaches back past it) and, guessing the spacing, the ones after it.
    const margin = Math.max(1, Math.floor(windowLength / 4));
    const plan = [next, before];
    // A fetched run's carry reaches about windowLength messages back from its position.
    for (let guess = frontier + margin, k = 0; guess > seedLength && k < 64; guess -= windowLength - margin, k++)
      plan.push(predict(guess));
    const size = starts.size;
    await fetchStarts(plan);
    if (starts.size === size) throw new ChainMismatch(); // nothing new to learn: do not loop
  }
  if (frontier > 0) {
    const first = starts.get(0) ?? (await readStart(client, workflowId, ids[0]));
    parts.unshift(seedOf(first).slice(0, frontier));
  }
  const transcript = parts.flat();
  if (transcript.length !== total) throw new ChainMismatch();
  return {
    transcript,
    exact,
    runs: [
      ...runs,
      ...[...starts.entries()]
        .sort((a, b) => b[0] - a[0])
        .map(([, s]) => s)
        .filter((s) => s !== last),
    ],
  };
}
