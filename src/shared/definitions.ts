/** Names shared by the workflow, the worker and the client: queries and the event sink. */
import { defineQuery, defineUpdate, type Sinks } from "@temporalio/workflow";
import type { UserMessage } from "@jai/ai";
import type {
  AgentEvent,
  AgentMessage,
  AgentRunState,
  AgentStopReason,
  BudgetLimit,
  ApprovalPolicy,
  ApproveOptions,
  PromptResult,
  SubmitToolResultOptions,
} from "./contracts.js";
import type { ModelContextPage } from "./wire.js";

/** The task queue runs and workers use unless told otherwise. */
export const DEFAULT_TASK_QUEUE = "jai-agent";

/** Workflow type name of a run. */
export const AGENT_RUN_WORKFLOW = "agentRun";

/** Type of the ApplicationFailure a run with stopReason "error" fails with; its details carry the AgentRunResult. */
export const AGENT_RUN_FAILED = "AgentRunFailed";

/** Current status, turn, usage and pending tool calls. */
export const stateQuery = defineQuery<AgentRunState>("state");

/**
 * The full transcript (a continued transcript's earlier messages included).
 * `offset`/`limit` page through it so one answer stays small on long runs.
 */
export const transcriptQuery = defineQuery<AgentMessage[], [options?: { offset?: number; limit?: number }]>(
  "transcript",
);

/** The model's view of the conversation (details stripped, compacted), paged; read by workers whose cache misses. */
export const modelContextQuery = defineQuery<ModelContextPage, [options: { offset: number; limit: number }]>(
  "modelContext",
);

/** Workflow-level events leave the workflow through this sink: never recorded in history, not re-sent on replay. */
export interface AgentSinks extends Sinks {
  /**
   * `seq`: the event's number among those this run's workflow code emitted (workflows/event-sink.ts), the same
   * when a retried workflow task emits it again; absent from a bundle built before it was passed.
   */
  agent: { emit(event: AgentEvent, seq?: number): void };
  /** Run-level facts for the worker's metrics (src/worker/telemetry/metrics.ts); like `agent`, not called on replay. */
  metrics: {
    /** A run (not a continuation) started its loop. */
    runStarted(model: string): void;
    /** A run ended (its last prompt's stopReason). */
    runEnded(model: string, stopReason: AgentStopReason): void;
    /** A tool call started (+1) or stopped (-1) waiting for approval. */
    approvalsWaiting(delta: number): void;
    /** The loop compacted a run's context. */
    compacted(model: string): void;
    /** A model call fell back from one model of the run's chain to the next. */
    modelFallback(from: string, to: string): void;
    /** A limit of the run's budget ended it. */
    budgetExceeded(limit: BudgetLimit): void;
  };
}

/** A message a person sends into a run: text, or a user message. */
export type UserInput = string | UserMessage;

/** Steer a running run: the message enters before the next model call; unstarted tool calls of the batch are skipped. */
export const steerUpdate = defineUpdate<{ queued: number }, [message: UserInput]>("steer");

/** Queue a message for when the agent would otherwise stop: the run goes on with another turn. */
export const followUpUpdate = defineUpdate<{ queued: number }, [message: UserInput]>("followUp");

/**
 * What the `prompt` and `promptAnswer` updates return: the answer, or, when the
 * run continued as new before it was ready, the prompt's id to ask the next run
 * for it with `promptAnswer` (an update handler that waited across
 * continue-as-new would block it forever). `handle.prompt()` follows it.
 */
export type PromptUpdateResult = PromptResult | { continuedAsNew: true; promptId: number };

/** Session runs only: a new prompt; returns once its turns are done, with their messages. */
export const promptUpdate = defineUpdate<PromptUpdateResult, [message: UserInput]>("prompt");

/** Session runs only: waits for the answer of a prompt sent to an earlier run of the chain. */
export const promptAnswerUpdate = defineUpdate<PromptUpdateResult, [promptId: number]>("promptAnswer");

/** Session runs only: end the session once the current prompt is done. */
export const closeUpdate = defineUpdate<void>("close");

/** Let a tool call that waits for approval run (`{ remember: true }`: and stop asking for its tool in this run). */
export const approveUpdate = defineUpdate<void, [toolCallId: string, options?: ApproveOptions]>("approve");

/** Replace the run's approval policy; the next batch follows it. Returns the policy now in force. */
export const setApprovalPolicyUpdate = defineUpdate<ApprovalPolicy, [policy: ApprovalPolicy]>("setApprovalPolicy");

/** A client submits the result of a client tool call that waits for it (checked against the tool's result schema). */
export const submitToolResultUpdate = defineUpdate<
  void,
  [toolCallId: string, result: unknown, options?: SubmitToolResultOptions]
>("submitToolResult");

/** Refuse a tool call that waits for approval; the model sees the reason. */
export const denyUpdate = defineUpdate<void, [toolCallId: string, reason: string]>("deny");
