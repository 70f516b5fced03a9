/** Everything a run knows; the queries, the UI details and the result are read from it. */
import { setCurrentDetails, upsertSearchAttributes } from "@temporalio/workflow";
import type { SearchAttributeUpdatePair } from "@temporalio/common";
import type { ToolResultMessage, UserMessage } from "@jai/ai";
import type {
  AgentMessage,
  AgentRunState,
  AgentStopReason,
  ApprovalDecision,
  DroppedMessage,
  ExecuteToolOutput,
  PendingApproval,
  PendingToolCall,
  PromptAnswer,
  PromptResult,
} from "../types.js";
import { jsonBytes } from "./budgets.js";
import type { UserInput } from "./definitions.js";
import {
  AgentCostUsd,
  AgentModel,
  AgentSummary,
  AgentStatus,
  AgentStopReason as AgentStopReasonKey,
  AgentTools,
  AgentTotalTokens,
  AgentTurns,
} from "./search-attributes.js";
import { approvalDetails, runDetails } from "./summary.js";
import { addUsage, emptyUsage } from "../common/usage.js";

/** A session prompt waiting to be taken up; its caller waits for the answer under its id. */
export interface QueuedPrompt {
  id: number;
  message: UserMessage;
}

/** Results stay far below Temporal's 2 MB payload limit, however long the run. */
const RESULT_BUDGET_BYTES = 1_500_000;

/** All messages when they fit; else the final one and how many were left out (the transcript query has them all). */
export function fitMessages(
  messages: AgentMessage[],
  alreadyOmitted = 0,
): { messages: AgentMessage[]; messagesOmitted?: number } {
  if (jsonBytes(messages) <= RESULT_BUDGET_BYTES)
    return alreadyOmitted ? { messages, messagesOmitted: alreadyOmitted } : { messages };
  return { messages: messages.slice(-1), messagesOmitted: alreadyOmitted + messages.length - 1 };
}

/** The text a dropped message is remembered by. */
function preview(message: AgentMessage): string {
  const content = message.content;
  const text =
    typeof content === "string" ? content : content.map((c) => (c.type === "text" ? c.text : `[${c.type}]`)).join(" ");
  return text.length > 200 ? `${text.slice(0, 199)}…` : text;
}

/** One tool call waiting for a person. */
export interface ApprovalWait {
  pending: PendingApproval;
  decision?: ApprovalDecision;
}

export function toUserMessage(input: UserInput): UserMessage {
  return typeof input === "string" ? { role: "user", content: input, timestamp: Date.now() } : input;
}

/** `details` is for logs and UI only: the model never sees it. */
export function withoutDetails(message: AgentMessage): AgentMessage {
  if (message.role !== "toolResult" || message.details === undefined) return message;
  const { details: _details, ...rest } = message;
  return rest;
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

export class RunState {
  constructor(private readonly publisher: RunPublisher = temporalPublisher) {}

  transcript: AgentMessage[] = [];
  /** What the model sees: the transcript without details, compacted when it outgrows the budget. */
  context: AgentMessage[] = [];
  /** Bumped when earlier context messages are rewritten: workers' cached prefixes become stale. */
  contextEpoch = 0;
  /** Context messages the worker that made the last model call holds (it appended its reply). */
  workerKnows = 0;
  /** The task queue of the worker that answered the last model call (it holds the context): the next call goes there. */
  modelQueue?: string;
  /** How long the last model call waited in its queue: a busy worker gets longer before its calls give up on it. */
  modelQueueWaitMs?: number;
  /** How late the workflow task that took the run's last activity output started (see `noteTaskLag`). */
  taskLagMs?: number;
  /**
   * Tool results that are exactly their activity's output, by their content
   * (the very array the activity returned), with that activity's id: model
   * calls pass those by reference. Not by tool-call id: models reuse ids.
   */
  fromActivity = new Map<unknown, string>();
  /**
   * User messages that history holds already, by object: where (see
   * `UserInputRef.source`). A call whose new messages are too big to ride
   * inline passes these by reference.
   */
  fromInput = new WeakMap<AgentMessage, string>();
  newMessages: AgentMessage[] = [];
  usage = emptyUsage();
  turn = 0;
  phase: AgentRunState["phase"] = "starting";
  waitingForPrompt = false;
  pending: PendingToolCall[] = [];
  /** The batch being executed: its calls' outputs as they complete, for a clean end on cancellation. */
  batch?: { toolCallIds: string[]; outputs: (ExecuteToolOutput | undefined)[] };
  steering: UserMessage[] = [];
  followUps: UserMessage[] = [];
  /** Steering taken from the queue that enters the transcript before the next model call. */
  pendingInput: AgentMessage[] = [];
  /** Session prompts not yet taken up. */
  prompts: QueuedPrompt[] = [];
  nextPromptId = 1;
  /** The session prompt being answered. */
  currentPrompt?: { id: number; start: number };
  /** Answers of session prompts (positions among the chain's new messages), until their callers have them. */
  answers: PromptAnswer[] = [];
  /** Accepted messages that will never be processed, and why. */
  dropped: DroppedMessage[] = [];
  /** Continue-as-new is under way: update handlers that wait hand their callers over to the next run. */
  continuing = false;
  /** agent_start was emitted and its agent_end not yet. */
  loopOpen = false;
  /** A loop has started in this run or an earlier one of the chain. */
  everStarted = false;
  approvals = new Map<string, ApprovalWait>();
  closed = false;
  /** Continue-as-new: transcript messages earlier runs hold, new messages left behind, the previous run. */
  earlierMessages = 0;
  newMessagesOmitted = 0;
  previousRunId?: string;
  /** Model calls in this run (continue-as-new counts per run). */
  turnsThisRun = 0;
  stopReason?: AgentStopReason;
  errorMessage?: string;
  /** Search attribute values last upserted, by name; undefined while the run does not upsert them (see enableSearchAttributes). */
  private searchAttributes?: Map<string, unknown>;

  /** Messages a continued transcript starts from: in the transcript and context, not new. */
  seed(messages: AgentMessage[]): void {
    this.transcript.push(...messages);
    this.context.push(...messages.map(withoutDetails));
  }

  add(message: AgentMessage): void {
    this.transcript.push(message);
    this.context.push(withoutDetails(message));
    this.newMessages.push(message);
    if (message.role === "assistant") this.usage = addUsage(this.usage, message.usage);
  }

  /** Bytes of everything accepted and not yet in the transcript (all of it is carried across continue-as-new). */
  queuedBytes(): number {
    return (
      jsonBytes(this.steering) +
      jsonBytes(this.followUps) +
      jsonBytes(this.pendingInput) +
      jsonBytes(this.prompts.map((p) => p.message))
    );
  }

  /** Everything still queued will not be processed: record why, so the callers can see it. */
  dropQueued(reason: string): void {
    const drop = (kind: DroppedMessage["kind"], messages: AgentMessage[]) => {
      for (const message of messages) this.dropped.push({ kind, preview: preview(message), reason });
    };
    drop("steer", this.pendingInput.splice(0));
    drop("steer", this.steering.splice(0));
    drop("followUp", this.followUps.splice(0));
    drop(
      "prompt",
      this.prompts.splice(0).map((p) => p.message),
    );
  }

  /** Records the current session prompt's answer (positions over the chain's new messages). */
  answerPrompt(outcome: { stopReason: AgentStopReason; errorMessage?: string }): void {
    const current = this.currentPrompt;
    if (!current) return;
    this.currentPrompt = undefined;
    this.answers.push({
      id: current.id,
      start: current.start,
      end: this.newMessagesOmitted + this.newMessages.length,
      ...outcome,
    });
  }

  /** A prompt's answer as its caller receives it; messages left behind at continue-as-new are counted as omitted. */
  promptResult(answer: PromptAnswer): PromptResult {
    const from = answer.start - this.newMessagesOmitted;
    const messages = this.newMessages.slice(Math.max(0, from), Math.max(0, answer.end - this.newMessagesOmitted));
    return {
      ...fitMessages(messages, Math.max(0, Math.min(answer.end, this.newMessagesOmitted) - answer.start)),
      stopReason: answer.stopReason,
      ...(answer.errorMessage !== undefined ? { errorMessage: answer.errorMessage } : {}),
    };
  }

  hasResult(toolCallId: string): boolean {
    return this.transcript.some((m) => m.role === "toolResult" && (m as ToolResultMessage).toolCallId === toolCallId);
  }

  status(): AgentRunState["status"] {
    if (this.stopReason !== undefined && !this.waitingForPrompt) {
      return this.stopReason === "error" ? "failed" : this.stopReason === "aborted" ? "cancelled" : "completed";
    }
    if (this.waitingForPrompt) return "waiting_for_prompt";
    return [...this.approvals.values()].some((a) => !a.decision) ? "waiting_for_approval" : "running";
  }

  snapshot(): AgentRunState {
    return {
      status: this.status(),
      phase: this.phase,
      turn: this.turn,
      usage: this.usage,
      pendingToolCalls: this.pending.map((p) => ({ ...p })),
      pendingApprovals: [...this.approvals.values()].filter((a) => !a.decision).map((a) => ({ ...a.pending })),
      queuedSteering: this.steering.length + this.pendingInput.length,
      queuedFollowUps: this.followUps.length,
      messageCount: this.earlierMessages + this.transcript.length,
      earlierMessages: this.earlierMessages,
      ...(this.previousRunId ? { previousRunId: this.previousRunId } : {}),
      stopReason: this.stopReason,
      errorMessage: this.errorMessage,
      ...(this.dropped.length > 0 ? { dropped: [...this.dropped] } : {}),
    };
  }

  /** Steering queued so far enters before the next model call (pi: after a turn's tools, before the next turn). */
  takeSteering(): void {
    this.pendingInput.push(...this.steering.splice(0));
  }

  /** Follow-ups queued so far start more turns once the loop would stop; false when there are none. */
  takeFollowUps(): boolean {
    this.pendingInput.push(...this.followUps.splice(0));
    return this.pendingInput.length > 0;
  }

  /** The loop stops with messages taken but not entered: they go back to the front of the steering queue. */
  returnPendingInput(): void {
    this.steering.unshift(...(this.pendingInput.splice(0) as UserMessage[]));
  }

  /** The messages taken up for the next turn, removed from the queue. */
  takePendingInput(): AgentMessage[] {
    return this.pendingInput.splice(0);
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
    const line = runDetails(
      s.status,
      s.phase.replace("_", " "),
      s.turn,
      s.usage,
      [extra, waiting].filter(Boolean).join(" · ") || undefined,
    );
    this.publisher.details(s.pendingApprovals.length > 0 ? `${line}\n\n${approvalDetails(s.pendingApprovals)}` : line);
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
}
