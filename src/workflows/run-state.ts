/**
 * Everything a run knows; the queries, the UI details and the result are read
 * from it. Made of parts, each written by one file only (test/unit/run-state-owners.test.ts
 * holds them to it): the conversation (conversation.ts), the inbox (inbox.ts),
 * the tool batch and approvals (tool-batch-state.ts), the model route
 * (routing.ts); the run's lifecycle (turns, phase, outcome) is written here.
 * What crosses continue-as-new is in one place: `toCarry` and `fromCarry`.
 */
import { setCurrentDetails, upsertSearchAttributes } from "@temporalio/workflow";
import type { SearchAttributeUpdatePair } from "@temporalio/common";
import type { UserMessage } from "@jai/ai";
import type {
  AgentMessage,
  AgentRunResult,
  AgentRunState,
  AgentStopReason,
  PromptResult,
} from "../shared/contracts.js";
import type { ContinuedRun, PromptAnswer, PromptLoopState, RunSetup } from "../shared/wire.js";
import { jsonBytes } from "../shared/payload-limits.js";
import { shortenToolResults } from "./compaction.js";
import { Conversation } from "./conversation.js";
import type { UserInput } from "../shared/definitions.js";
import { Inbox } from "./inbox.js";
import { ModelRoute } from "./routing.js";
import {
  AgentCostUsd,
  AgentModel,
  AgentSummary,
  AgentStatus,
  AgentStopReason as AgentStopReasonKey,
  AgentTools,
  AgentTotalTokens,
  AgentTurns,
} from "../shared/search-attributes.js";
import { approvalDetails, clientResultDetails, runDetails } from "../shared/summary.js";
import { policyLine } from "../shared/approval-rules.js";
import type { ActiveFeature } from "./features/feature.js";
import { ToolBatchState } from "./tool-batch-state.js";

export { withoutDetails } from "./conversation.js";
export type { QueuedPrompt } from "./inbox.js";
export type { ApprovalWait } from "./tool-batch-state.js";

/** Results stay far below Temporal's 2 MB payload limit, however long the run. */
const RESULT_MESSAGE_BYTES = 1_500_000;
/**
 * With a blob store (`RunSetup.blobStore`) a result goes there whole, history keeping a claim: the bound is the
 * time the run's last workflow task takes to encode and upload it (~0.1 s a MB measured; Temporal's workflow task
 * timeout is 10 s), not Temporal's payload limit (docs/large-payloads.md).
 */
export const STORED_RESULT_MESSAGE_BYTES = 32 * 1024 * 1024;
/** New messages carried for the final result (older ones are counted, not carried). */
const CARRIED_NEW_MESSAGES_BYTES = 256_000;
/** Unclaimed prompt answers carried (each a few numbers); older ones are dropped. */
const CARRIED_ANSWERS = 50;
/** Dropped messages carried (the newest). */
const CARRIED_DROPPED = 100;

/** All messages when they fit; else the final one and how many were left out (the transcript query has them all). */
export function fitMessages(
  messages: AgentMessage[],
  alreadyOmitted = 0,
  maxBytes = RESULT_MESSAGE_BYTES,
): { messages: AgentMessage[]; messagesOmitted?: number } {
  if (jsonBytes(messages) <= maxBytes)
    return alreadyOmitted ? { messages, messagesOmitted: alreadyOmitted } : { messages };
  return { messages: messages.slice(-1), messagesOmitted: alreadyOmitted + messages.length - 1 };
}

/** The newest messages within `maxBytes` bytes, and how many older ones were left out. */
function newest(messages: AgentMessage[], maxBytes: number): { kept: AgentMessage[]; left: number } {
  let keepFrom = messages.length;
  let size = 2;
  while (keepFrom > 0) {
    const next = jsonBytes(messages[keepFrom - 1]) + 1;
    if (size + next > maxBytes) break;
    size += next;
    keepFrom--;
  }
  return { kept: messages.slice(keepFrom), left: keepFrom };
}

/** A prompt as the transcript holds it; a string is stamped with `at` (default: now, the workflow's clock). */
export function toUserMessage(input: UserInput, at = Date.now()): UserMessage {
  return typeof input === "string" ? { role: "user", content: input, timestamp: at } : input;
}

/** Turns between upserts of the search-attribute counters when the status does not change. */
const COUNTER_EVERY = 10;

/** The search attributes that follow the run's state (status, counters, outcome). */
function stateAttributes(s: AgentRunState): SearchAttributeUpdatePair[] {
  return [
    { key: AgentStatus, value: s.status },
    { key: AgentTurns, value: s.turn },
    { key: AgentTotalTokens, value: s.usage.totalTokens },
    { key: AgentCostUsd, value: s.usage.cost.total },
    ...(s.stopReason !== undefined ? [{ key: AgentStopReasonKey, value: s.stopReason }] : []),
  ];
}

/** Where a run shows itself to operators: Temporal's current details and search attributes (no-ops in the loop's in-process tests). */
export interface RunPublisher {
  details(text: string): void;
  searchAttributes(pairs: SearchAttributeUpdatePair[]): void;
}

const temporalPublisher: RunPublisher = { details: setCurrentDetails, searchAttributes: upsertSearchAttributes };

/** What the run features add to each: the snapshot, the result, the carry. */
interface FeatureFields {
  snapshot: Partial<AgentRunState>;
  result: Partial<AgentRunResult>;
  carry: Partial<ContinuedRun>;
}

export class RunState {
  constructor(private readonly publisher: RunPublisher = temporalPublisher) {}

  /** Transcript and model context (conversation.ts writes it). */
  readonly conversation = new Conversation();
  /** Steering, follow-ups, session prompts and their answers, dropped messages, closed (inbox.ts writes it). */
  readonly inbox = new Inbox();
  /** The tool batch being run and the calls waiting for approval (tool-batch-state.ts writes it). */
  readonly tools = new ToolBatchState();
  /** Where the next model call goes (routing.ts writes it). */
  readonly route = new ModelRoute();
  /** The run features this run uses (`useFeatures`). */
  private features: readonly ActiveFeature[] = [];

  /** Model calls started (the whole chain). */
  turn = 0;
  /** Model calls in this run (continue-as-new counts per run). */
  turnsThisRun = 0;
  phase: AgentRunState["phase"] = "starting";
  /** A session between prompts. */
  waitingForPrompt = false;
  /** Continue-as-new is under way: update handlers that wait hand their callers over to the next run. */
  continuing = false;
  /** agent_start was emitted and its agent_end not yet. */
  loopOpen = false;
  /** A loop has started in this run or an earlier one of the chain. */
  everStarted = false;
  /** The run this one continued from. */
  previousRunId?: string;
  stopReason?: AgentStopReason;
  errorMessage?: string;
  /** The last prompt's answer as a value, when a run feature judged one (LoopOutcome.output). */
  output?: unknown;
  /** The most bytes of messages a result or prompt answer carries (more with a blob store: `useBlobStore`). */
  resultMessageBytes = RESULT_MESSAGE_BYTES;
  /** Search attribute values last upserted, by name; undefined while the run does not upsert them (see enableSearchAttributes). */
  private searchAttributes?: Map<string, unknown>;

  // Reading shortcuts (the loop's in-process tests read and queue through them).
  get transcript(): AgentMessage[] {
    return this.conversation.transcript;
  }
  get context(): AgentMessage[] {
    return this.conversation.context;
  }
  get newMessages(): AgentMessage[] {
    return this.conversation.newMessages;
  }
  get steering(): UserMessage[] {
    return this.inbox.steering;
  }
  get followUps(): UserMessage[] {
    return this.inbox.followUps;
  }

  add(message: AgentMessage): void {
    this.conversation.add(message);
  }

  /** A loop starts (`resumed`: one a continued run carried, whose agent_start the earlier run emitted). */
  loopStarted(resumed: boolean): void {
    this.loopOpen = true;
    if (!resumed) this.everStarted = true;
  }

  /** The loop's agent_end was emitted. */
  loopEnded(): void {
    this.loopOpen = false;
  }

  /** A prompt's loop ended: the run's outcome so far, and the prompt's answer when it was a session prompt. */
  promptEnded(outcome: { stopReason: AgentStopReason; errorMessage?: string; output?: unknown }): void {
    this.stopReason = outcome.stopReason;
    this.errorMessage = outcome.errorMessage;
    this.output = outcome.output;
    this.answerPrompt(outcome);
  }

  /** Records the current session prompt's answer (positions over the chain's new messages). */
  private answerPrompt(outcome: { stopReason: AgentStopReason; errorMessage?: string; output?: unknown }): void {
    this.inbox.answerPrompt(outcome, this.conversation.newMessagesEnd());
  }

  /** A session waits for its next prompt. */
  waitForPrompt(): void {
    this.waitingForPrompt = true;
    this.setPhase("done");
  }

  /** A session's wait ended: its next prompt, now being answered (undefined when it ends instead). */
  takePrompt(): UserMessage | undefined {
    this.waitingForPrompt = false;
    const message = this.inbox.takePrompt(this.conversation.newMessagesEnd());
    if (message) {
      this.stopReason = undefined;
      this.errorMessage = undefined;
      this.output = undefined;
    }
    return message;
  }

  /** The run's workers keep big payloads in a blob store (`RunSetup.blobStore`): results carry their messages whole. */
  useBlobStore(on: boolean | undefined): void {
    if (on) this.resultMessageBytes = STORED_RESULT_MESSAGE_BYTES;
  }

  /** The setup activity failed for good: the run ends with stopReason "error". */
  setupFailed(message: string): void {
    this.stopReason = "error";
    this.errorMessage = message;
    this.inbox.dropQueued("run ended: error");
  }

  /** The run was cancelled: it ends "aborted", every prompt waiting for an answer gets one. */
  cancelled(): void {
    this.tools.clear();
    this.stopReason = "aborted";
    this.errorMessage = "Run cancelled";
    this.answerPrompt({ stopReason: "aborted", errorMessage: this.errorMessage });
    this.inbox.abortQueuedPrompts(this.conversation.newMessagesEnd());
    this.inbox.dropQueued("run cancelled");
  }

  /** The run is done (`carried`: how a continued session's last prompt ended, when it closed before another). */
  finished(carried: AgentStopReason | undefined): void {
    this.stopReason ??= carried;
    this.waitingForPrompt = false;
    this.setPhase("done");
  }

  /** Continue-as-new begins (true) or was given up (false). */
  setContinuing(continuing: boolean): void {
    this.continuing = continuing;
  }

  /** A prompt's answer as its caller receives it; messages left behind at continue-as-new are counted as omitted. */
  promptResult(answer: PromptAnswer): PromptResult {
    const omitted = this.conversation.newMessagesOmitted;
    const from = answer.start - omitted;
    const messages = this.conversation.newMessages.slice(Math.max(0, from), Math.max(0, answer.end - omitted));
    return {
      ...fitMessages(messages, Math.max(0, Math.min(answer.end, omitted) - answer.start), this.resultMessageBytes),
      stopReason: answer.stopReason,
      ...(answer.errorMessage !== undefined ? { errorMessage: answer.errorMessage } : {}),
      ...(answer.output !== undefined ? { output: answer.output } : {}),
    };
  }

  status(): AgentRunState["status"] {
    if (this.stopReason !== undefined && !this.waitingForPrompt) {
      return this.stopReason === "error" ? "failed" : this.stopReason === "aborted" ? "cancelled" : "completed";
    }
    if (this.waitingForPrompt) return "waiting_for_prompt";
    if ([...this.tools.approvals.values()].some((a) => !a.decision)) return "waiting_for_approval";
    return this.tools.onlyClientsWait() ? "waiting_for_client" : "running";
  }

  snapshot(): AgentRunState {
    const { conversation, inbox } = this;
    return {
      status: this.status(),
      phase: this.phase,
      turn: this.turn,
      usage: conversation.usage,
      pendingToolCalls: this.tools.pending.map((p) => ({ ...p })),
      pendingApprovals: this.tools.waitingApprovals(),
      queuedSteering: inbox.steering.length + inbox.pendingInput.length,
      queuedFollowUps: inbox.followUps.length,
      messageCount: conversation.earlierMessages + conversation.transcript.length,
      earlierMessages: conversation.earlierMessages,
      ...(this.previousRunId ? { previousRunId: this.previousRunId } : {}),
      stopReason: this.stopReason,
      errorMessage: this.errorMessage,
      ...(inbox.dropped.length > 0 ? { dropped: [...inbox.dropped] } : {}),
      ...(this.tools.clientWaits.size > 0 ? { pendingClientResults: this.tools.waitingClientResults() } : {}),
      ...this.featureFields("snapshot"),
    };
  }

  /** The run features this run uses (features/index.ts): their parts of the snapshot, result and carry. */
  useFeatures(features: readonly ActiveFeature[]): void {
    this.features = features;
  }

  /** The features' fields of the `state` query ("snapshot"), of the run's result ("result"), or of the carry. */
  featureFields<K extends "snapshot" | "result" | "carry">(kind: K): FeatureFields[K] {
    return Object.assign({}, ...this.features.map((f) => f[kind]?.(this)));
  }

  /** A turn begins: counters up, phase "streaming", shown to operators. */
  startTurn(): void {
    this.turn++;
    this.turnsThisRun++;
    this.setPhase("streaming");
  }

  /** Moves to `phase` and shows it (with `extra`, e.g. "3 tool calls") in the run's details. */
  setPhase(phase: AgentRunState["phase"], extra?: string): void {
    this.phase = phase;
    this.publishDetails(extra);
  }

  publishDetails(extra?: string): void {
    const s = this.snapshot();
    const waiting = s.pendingApprovals.length > 0 ? `${s.pendingApprovals.length} awaiting approval` : undefined;
    const clients = s.pendingClientResults?.length
      ? `${s.pendingClientResults.length} awaiting a client's result`
      : undefined;
    const line = runDetails(
      s.status,
      s.phase.replace("_", " "),
      s.turn,
      s.usage,
      [extra, waiting, clients].filter(Boolean).join(" · ") || undefined,
    );
    // Shown only when the run has them, so runs without a policy or client tools publish what they always did.
    const more = [
      policyLine(this.tools.policy, this.tools.remembered, this.tools.floor),
      s.pendingClientResults?.length ? clientResultDetails(s.pendingClientResults) : undefined,
    ].filter(Boolean);
    const full = s.pendingApprovals.length > 0 ? `${line}\n\n${approvalDetails(s.pendingApprovals)}` : line;
    this.publisher.details(more.length ? `${full}\n\n${more.join("\n\n")}` : full);
    this.publishSearchAttributes(s);
  }

  /**
   * From now on the run keeps its search attributes up to date (the caller
   * checked the patch and that the namespace has them): model and tools once,
   * the rest whenever it changes. Each upsert is a command, so only changes are sent.
   * `oneUpsert`: the first upsert carries model, tools and state together (runs since the baseline patch;
   * runs recorded before it sent model and tools apart).
   */
  enableSearchAttributes(model: string, tools: string[], summary: string, oneUpsert = true): void {
    this.searchAttributes = new Map();
    const fixed: SearchAttributeUpdatePair[] = [
      { key: AgentModel, value: model },
      { key: AgentTools, value: tools },
      ...(summary ? [{ key: AgentSummary, value: summary }] : []),
    ];
    // Nothing is sent yet, so every pair of the state goes with them.
    if (oneUpsert) return this.publisher.searchAttributes([...fixed, ...this.record(stateAttributes(this.snapshot()))]);
    this.publisher.searchAttributes(fixed);
    this.publishSearchAttributes(this.snapshot());
  }

  private publishSearchAttributes(s: AgentRunState): void {
    const sent = this.searchAttributes;
    if (!sent) return;
    const changed = stateAttributes(s).filter((pair) => sent.get(pair.key.name) !== pair.value);
    if (changed.length === 0) return;
    // Each upsert is an event: the counters (turns, tokens, cost) ride along with a status change, and on
    // their own only every COUNTER_EVERY turns, so a long run adds one event per ten turns, not one per turn.
    const statusChanged = changed.some(
      (pair) => pair.key.name === AgentStatus.name || pair.key.name === AgentStopReasonKey.name,
    );
    if (!statusChanged && s.turn % COUNTER_EVERY !== 0) return;
    this.publisher.searchAttributes(this.record(changed));
  }

  /** Notes `pairs` as sent (only changes are sent again). */
  private record(pairs: SearchAttributeUpdatePair[]): SearchAttributeUpdatePair[] {
    for (const pair of pairs) this.searchAttributes?.set(pair.key.name, pair.value);
    return pairs;
  }

  /**
   * What the next run needs, within `maxBytes` (what a run's input has room
   * for beside the rest of it); undefined when the context cannot be made to
   * fit (the run then goes on as it is). `loop`: where the prompt being
   * processed stands (absent when a session waits for its next prompt).
   */
  toCarry(setup: RunSetup, maxBytes: number, loop?: PromptLoopState): ContinuedRun | undefined {
    const { conversation, inbox } = this;
    const fixed: ContinuedRun = {
      setup,
      context: [],
      earlierMessages: conversation.earlierMessages + conversation.transcript.length,
      newMessages: [],
      newMessagesOmitted: 0,
      usage: conversation.usage,
      turn: this.turn,
      steering: inbox.steering,
      followUps: inbox.followUps,
      prompts: inbox.prompts,
      nextPromptId: inbox.nextPromptId,
      answers: inbox.answers.slice(-CARRIED_ANSWERS),
      closed: inbox.closed,
      // A session waiting for its next prompt: how its last prompt ended, should it be closed in the next run.
      ...(!loop && this.stopReason !== undefined ? { stopReason: this.stopReason } : {}),
      dropped: inbox.dropped.slice(-CARRIED_DROPPED),
      ...(loop ? { loop: { ...loop, pending: inbox.pendingInput } } : {}),
      ...(!loop && this.output !== undefined ? { output: this.output } : {}),
      ...this.featureFields("carry"),
    };
    let left = maxBytes - jsonBytes(fixed) - 1000;
    const { kept, left: omitted } = newest(
      conversation.newMessages,
      Math.min(CARRIED_NEW_MESSAGES_BYTES, Math.max(0, left / 4)),
    );
    left -= jsonBytes(kept);
    let context = conversation.context;
    if (jsonBytes(context) > left)
      context = shortenToolResults(context, left / 4, (m) => Math.ceil(jsonBytes(m) / 4)).context;
    if (jsonBytes(context) > left) return undefined;
    const carry: ContinuedRun = {
      ...fixed,
      context,
      newMessages: kept,
      newMessagesOmitted: conversation.newMessagesOmitted + omitted,
    };
    if (loop) carry.loop = { ...carry.loop!, start: Math.max(0, loop.start - omitted) };
    return carry;
  }

  /** The new run takes over the carried state (`previousRunId`: the run it continues). */
  fromCarry(carry: ContinuedRun, previousRunId: string | undefined): void {
    this.conversation.restore(carry);
    this.inbox.restore(carry);
    this.turn = carry.turn;
    this.everStarted = true;
    this.previousRunId = previousRunId;
    this.output = carry.output;
    // Queued messages this run's input carries are held there (see `UserInputRef`).
    const held = (queue: string, messages: AgentMessage[]) =>
      messages.forEach((m, i) => this.conversation.noteInput(m, `carried:${queue}:${i}`));
    held("steering", this.inbox.steering);
    held("followUps", this.inbox.followUps);
    held(
      "prompts",
      this.inbox.prompts.map((p) => p.message),
    );
    held("pending", this.inbox.pendingInput);
  }
}
