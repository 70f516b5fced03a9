/** Everything a run knows; the queries, the UI details and the result are read from it. */
import { setCurrentDetails } from "@temporalio/workflow";
import type { ToolResultMessage, UserMessage } from "@jai/ai";
import type {
  AgentMessage,
  AgentRunState,
  AgentStopReason,
  ApprovalDecision,
  ExecuteToolOutput,
  PendingApproval,
  PendingToolCall,
  PromptResult,
} from "../types.js";
import type { UserInput } from "./definitions.js";
import { runDetails } from "./summary.js";
import { addUsage, emptyUsage } from "./usage.js";

/** A session prompt waiting to be processed, and where its answer goes. */
export interface QueuedPrompt {
  id: number;
  message: UserMessage;
  /** The run has taken it up (its turns are running or done). */
  taken?: boolean;
  result?: PromptResult;
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

export class RunState {
  transcript: AgentMessage[] = [];
  /** What the model sees: the transcript without details, compacted when it outgrows the budget. */
  context: AgentMessage[] = [];
  /** Bumped when earlier context messages are rewritten: workers' cached prefixes become stale. */
  contextEpoch = 0;
  /** Context messages the worker that made the last model call holds (it appended its reply). */
  workerKnows = 0;
  /**
   * Tool results that are exactly their activity's output, by their content
   * (the very array the activity returned), with that activity's id: model
   * calls pass those by reference. Not by tool-call id: models reuse ids.
   */
  fromActivity = new Map<unknown, string>();
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
  prompts: QueuedPrompt[] = [];
  nextPromptId = 1;
  approvals = new Map<string, ApprovalWait>();
  closed = false;
  /** Continue-as-new: transcript messages earlier runs hold, new messages left behind, the previous run. */
  earlierMessages = 0;
  newMessagesOmitted = 0;
  previousRunId?: string;
  /** Model calls in this run (continue-as-new counts per run). */
  turnsThisRun = 0;
  /** Times the context was compacted. */
  compactions = 0;
  stopReason?: AgentStopReason;
  errorMessage?: string;

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
      queuedSteering: this.steering.length,
      queuedFollowUps: this.followUps.length,
      messageCount: this.earlierMessages + this.transcript.length,
      earlierMessages: this.earlierMessages,
      ...(this.previousRunId ? { previousRunId: this.previousRunId } : {}),
      stopReason: this.stopReason,
      errorMessage: this.errorMessage,
    };
  }

  publishDetails(extra?: string): void {
    const s = this.snapshot();
    const waiting = s.pendingApprovals.length > 0 ? `${s.pendingApprovals.length} awaiting approval` : undefined;
    setCurrentDetails(runDetails(s.status, s.phase.replace("_", " "), s.turn, s.usage, [extra, waiting].filter(Boolean).join(" · ") || undefined));
  }
}
