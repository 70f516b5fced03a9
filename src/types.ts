/**
 * The contracts of the durable agent loop. Names and fields of the seed's types
 * (AgentTool, AgentToolResult, AgentEvent, ...) are exactly the seed's; the run
 * types (input, result, state) are this project's.
 *
 * Everything that crosses the Temporal boundary (run input/result, queries,
 * activity inputs/outputs) is plain JSON: no Map, Date, AbortSignal or function.
 */
import type {
  Api,
  AssistantMessage,
  AssistantMessageEvent,
  ImageContent,
  Message,
  Model,
  TextContent,
  Tool,
  ToolResultMessage,
  Usage,
  UserMessage,
} from "@jai/ai";
import type { Duration } from "@temporalio/common";
import type { Static, TSchema } from "@sinclair/typebox";
import type { WebhookTarget } from "./webhooks/field.js";

/** A message of the transcript. The loop only knows the provider layer's messages. */
export type AgentMessage = Message;

/** What a tool returns. */
export interface AgentToolResult<TDetails = unknown> {
  /** Goes back to the model, wrapped in a ToolResultMessage. */
  content: (TextContent | ImageContent)[];
  /**
   * Structured data for logs and UI. Kept in the transcript, never sent to the model.
   * Contract: plain JSON (it is stored in Temporal history).
   */
  details?: TDetails;
  /** Stop after this batch; only honoured if EVERY result of the batch says true. */
  terminate?: boolean;
}

/** Progress callback handed to `execute`; each call becomes a `tool_execution_update` event. */
export type ToolUpdateCallback<TDetails = unknown> = (partial: AgentToolResult<TDetails>) => void;

/**
 * "parallel": may run concurrently with other parallel calls of the batch.
 * "sequential": never overlaps any other call of the batch.
 */
export type ToolExecutionMode = "sequential" | "parallel";

/**
 * Temporal activity settings of a tool's calls or a run's model calls; plain
 * JSON (durations as ms numbers or strings like "30s"). Defaults: tools "10m"
 * per attempt, "30s" heartbeat, 3 attempts; model calls "10m", "30s", 8
 * attempts from 2 s doubling to 60 s.
 */
export interface AgentActivityOptions {
  /** Longest a single attempt may run. */
  startToCloseTimeout?: Duration;
  /** A dead worker is noticed after this long without a heartbeat (the activity heartbeats on a timer). */
  heartbeatTimeout?: Duration;
  /** Temporal retry policy for infrastructure and transient provider failures (a thrown tool error is a result, never retried). */
  retry?: RetryOptions;
}

/** @deprecated The same as `AgentActivityOptions`. */
export type ToolActivityOptions = AgentActivityOptions;

/** The subset of Temporal's RetryPolicy that the loop accepts, as plain JSON. */
export interface RetryOptions {
  /** Delay before the first retry. */
  initialInterval?: Duration;
  /** Multiplier applied to the delay after each retry. */
  backoffCoefficient?: number;
  /** Upper bound of the delay between retries. */
  maximumInterval?: Duration;
  /** Total attempts including the first; 1 disables retries. */
  maximumAttempts?: number;
  /** Application failure types that are never retried. */
  nonRetryableErrorTypes?: string[];
}

/** Bounds of one tool result; the rest is cut with a note the model sees. */
export interface ToolResultLimits {
  /** Text kept, in bytes. Default 50 KB. */
  maxBytes?: number;
  /** Text kept, in lines. Default 2,000. */
  maxLines?: number;
  /** Largest image (base64 bytes) kept; a larger one becomes a note. Default 1 MB. */
  maxImageBytes?: number;
  /** Largest `details` (JSON bytes); larger ones are replaced by { truncated, bytes, preview }. Default 64 KB. */
  maxDetailsBytes?: number;
}

/** A tool the agent can call. It lives in the worker: the workflow only knows its metadata. */
export interface AgentTool<T extends TSchema = TSchema, TDetails = unknown> extends Tool<T> {
  /** Human label for the UI; defaults to `name`. */
  label?: string;
  /**
   * Runs the tool. Signals failure by throwing: the message becomes an `isError` result.
   * Contract: `args` were validated and coerced against `parameters`; `signal` fires when the
   * run or the activity is cancelled; `onUpdate` is only honoured until the returned promise settles.
   */
  execute(
    toolCallId: string,
    args: Static<T>,
    signal?: AbortSignal,
    onUpdate?: ToolUpdateCallback<TDetails>,
  ): Promise<AgentToolResult<TDetails>>;
  /** Overrides the run's `toolExecution` for calls of this tool. */
  executionMode?: ToolExecutionMode;
  /** Timeouts and retry policy of this tool's activities. */
  activity?: ToolActivityOptions;
  /**
   * Ask a person before running: `true` always, or a predicate on the validated
   * arguments, evaluated in the worker. The run waits (a workflow condition, no
   * worker resources) until `approve`/`deny` or the approval timeout (denied).
   */
  requiresApproval?: boolean | ((args: Static<T>, toolCallId: string) => boolean | Promise<boolean>);
  /** How long a call may wait for approval before it counts as denied; default the run's `approvalTimeout`, else forever. */
  approvalTimeout?: Duration;
  /** After cancellation, how long `execute` may take to honour its signal before it is abandoned. Default 5 s. */
  cancelGracePeriodMs?: number;
  /** This tool's result limits; they win over the run's `toolResultLimits`. */
  resultLimits?: ToolResultLimits;
  /**
   * false: never run a call twice. A call whose worker died mid-way is not
   * retried; its result says it was interrupted and the run goes on. (The same
   * as `activity.retry.maximumAttempts: 1`.) Default true.
   */
  idempotent?: boolean;
  /**
   * Quick (well under a minute), idempotent worker code, e.g. a lookup or a
   * computation: its calls run as Temporal local activities, in the worker
   * that runs the workflow, without a round trip through the task queue; the
   * result is recorded as a marker. A call may run again if that worker dies
   * before the result is recorded, so ignored when `idempotent` is false.
   * Local activities do not heartbeat: keep slow or streaming tools regular.
   * Default false.
   */
  fast?: boolean;
  /** Set by `agentTool()`: a call starts a child agent run instead of `execute`. */
  subAgent?: SubAgentSpec;
}

/**
 * A sub-agent: each call of its tool is a child `agentRun` workflow (id
 * `<parent workflow id>/sub-<turn>-<index>`) whose final answer is the result.
 * Plain JSON: it is part of the run's setup in history.
 */
export interface SubAgentSpec {
  /** The child's model. */
  model: ModelRef;
  /** The child's system prompt. */
  systemPrompt?: string;
  /** The worker's tools the child may use (names); default none. */
  tools?: string[];
  /** The child's most model calls; default 10. */
  maxTurns?: number;
  /** The child's default tool execution mode. */
  toolExecution?: ToolExecutionMode;
  /** Task queue of the child; default the parent's. */
  taskQueue?: string;
  /**
   * How deep sub-agents may nest through this tool, the top-level run being
   * depth 0: a call made by a run at depth `maxDepth` (or deeper) starts no
   * child and gets an error tool result instead. Default 3; 1 lets only a
   * top-level run delegate.
   */
  maxDepth?: number;
}

/** Everything the loop tells the outside world about a run, in order. */
export type AgentEvent =
  | { type: "agent_start" }
  | { type: "agent_end"; messages: AgentMessage[] }
  | { type: "turn_start" }
  | { type: "turn_end"; message: AssistantMessage; toolResults: ToolResultMessage[] }
  | { type: "message_start"; message: AgentMessage }
  | { type: "message_update"; message: AssistantMessage; assistantEvent: AssistantMessageEvent }
  | { type: "message_end"; message: AgentMessage }
  | { type: "tool_execution_start"; toolCallId: string; toolName: string; args: unknown }
  | { type: "tool_execution_update"; toolCallId: string; toolName: string; partial: AgentToolResult }
  | { type: "tool_execution_end"; toolCallId: string; toolName: string; result: AgentToolResult; isError: boolean };

/** Identifies the run an event belongs to. */
export interface AgentRunRef {
  /** Temporal workflow id of the run. */
  workflowId: string;
  /** Temporal run id (changes on continue-as-new). */
  runId: string;
}

/** Receives every event of every run the worker serves. Contract: must not throw; slow sinks slow the worker. */
export type AgentEventSink = (event: AgentEvent, run: AgentRunRef) => void | Promise<void>;

/** A model: an `@jai/ai` Model object, or `"provider/modelId"` resolved in the worker. */
export type ModelRef = Model<Api> | string;

/** Why a run ended. */
export type AgentStopReason = "stop" | "length" | "error" | "aborted" | "terminate" | "max_turns";

/** Input of the `agentRun` workflow. Plain JSON; validated when the run starts. */
export interface AgentRunInput {
  /** The model to call; a string is resolved by the worker (its `models` option, then `@jai/ai`'s catalogue). */
  model: ModelRef;
  /** System prompt sent with every model call. */
  systemPrompt?: string;
  /**
   * A string or user message starts a new conversation turn; a list of messages is a
   * transcript to continue from (its last message must be a user or tool result message).
   */
  prompt: string | UserMessage | AgentMessage[];
  /** Names of the worker's tools this run may use; default all of them. */
  tools?: string[];
  /** Default execution mode of tool calls; default "parallel". */
  toolExecution?: ToolExecutionMode;
  /** Most model calls the run makes; default 50. */
  maxTurns?: number;
  /** Temporal settings of the model activity. */
  modelActivity?: ModelActivityOptions;
  /**
   * Keep the run open after it would end, waiting for `prompt()` updates, until
   * `close()` or the idle timeout (default 1 hour). `maxTurns` then limits each prompt.
   */
  session?: boolean | { idleTimeout?: Duration };
  /** Default approval timeout of tools that require approval; default: wait forever. */
  approvalTimeout?: Duration;
  /** Result limits for every tool of the run (a tool's own `resultLimits` win). */
  toolResultLimits?: ToolResultLimits;
  /** Token budget of the model's context; default the model's context window less room for its answer. */
  contextBudgetTokens?: number;
  /**
   * How the context is brought back under budget: shorten the oldest tool
   * results (default), or the worker's `compactContext` function (e.g. an LLM
   * summary), run as its own activity; it falls back to the default on failure.
   */
  compaction?: "truncate-tool-results" | "worker";
  /**
   * Continue-as-new: always when Temporal suggests it (history ~4 MB / 4k events);
   * `afterTurns` also after that many model calls in one run (between turns; a
   * session between prompts). Transparent: same workflow id, same result.
   */
  continueAsNew?: { afterTurns?: number };
  /**
   * POST the run's outcome here when it ends, however it ends, signed with the
   * worker's secret of that name (HMAC-SHA256 of the body in `x-jai-signature`).
   */
  webhook?: WebhookTarget;
}

/** Internal: a run's state carried across continue-as-new. */
/**
 * The workflow's input as recorded: the caller's `AgentRunInput`, and in a run
 * that continued as new, what the previous run carried over (set by the
 * workflow itself, never by a caller).
 */
export interface AgentRunWorkflowInput extends AgentRunInput {
  /** What the previous run of the chain carried over. */
  continued?: ContinuedRun;
  /**
   * How deep this run is in a tree of sub-agents: set by the parent run when
   * it starts this one as a child (1 for its children); absent in a top-level
   * run (0). Sub-agent tools refuse calls past their `maxDepth`.
   */
  subAgentDepth?: number;
}

export interface ContinuedRun {
  /** Model and tools, resolved once. */
  setup: RunSetup;
  /** The model's context (compacted to fit the payload limit if needed). */
  context: AgentMessage[];
  /** Transcript messages held by earlier runs of the chain. */
  earlierMessages: number;
  /** The chain's new messages so far (only the newest, when they no longer fit). */
  newMessages: AgentMessage[];
  /** New messages left out of `newMessages`. */
  newMessagesOmitted: number;
  /** Usage so far. */
  usage: Usage;
  /** Model calls so far. */
  turn: number;
  /** Queued steering and follow-up messages. */
  steering: UserMessage[];
  followUps: UserMessage[];
  /** Session prompts not yet taken up, with their ids (their callers wait for them in the next run). */
  prompts?: { id: number; message: UserMessage }[];
  /** The next session prompt's id (ids are unique across the chain). */
  nextPromptId?: number;
  /** Answers of session prompts whose callers have not received them yet (they ask the next run). */
  answers?: PromptAnswer[];
  /** `close()` was called: the session ends once its prompts are answered. */
  closed?: boolean;
  /** How the last prompt ended, when the session waits for its next one (the result's stopReason if it is closed now). */
  stopReason?: AgentStopReason;
  /** Accepted messages that will not be processed, and why (they stay visible in the result). */
  dropped?: DroppedMessage[];
  /** Where the prompt being processed stands; absent when a session waits for its next prompt. */
  loop?: PromptLoopState;
}

/** Internal: where a session prompt's answer is among the chain's new messages. */
export interface PromptAnswer {
  /** The prompt's id. */
  id: number;
  /** First of its messages, counted over the chain's new messages. */
  start: number;
  /** One past its last message. */
  end: number;
  /** How its turns ended. */
  stopReason: AgentStopReason;
  /** Set when they ended on an error. */
  errorMessage?: string;
}

/** A message a caller sent that was accepted but will never be processed. */
export interface DroppedMessage {
  /** Which update sent it. */
  kind: "steer" | "followUp" | "prompt";
  /** Its first 200 characters of text. */
  preview: string;
  /** Why it was not processed, e.g. "run ended: max_turns". */
  reason: string;
}

/** Internal: the agent loop of one prompt, between two turns. */
export interface PromptLoopState {
  /** Index in the chain's new messages where this prompt's messages start. */
  start: number;
  /** Model calls made for this prompt. */
  turns: number;
  /** The last answer called tools: the loop goes on. */
  moreToolCalls: boolean;
  /** Messages to enter before the next model call. */
  pending: AgentMessage[];
  /** The session prompt being answered, if any, and where its messages start among the chain's new messages. */
  promptId?: number;
  promptStart?: number;
  /** The last assistant message's stop reason. */
  lastStop: AssistantMessage["stopReason"];
}

/** @deprecated The same as `AgentActivityOptions`. */
export type ModelActivityOptions = AgentActivityOptions;

/** What a run returns. */
export interface AgentRunResult {
  /** This run's new messages, the prompt first (none of a continued transcript's earlier messages). */
  messages: AgentMessage[];
  /** Why the run ended. */
  stopReason: AgentStopReason;
  /** Model calls made. */
  turns: number;
  /** Sum of the usage of every assistant message of the run. */
  usage: Usage;
  /** Set when `stopReason` is "error" or "aborted". */
  errorMessage?: string;
  /**
   * Set when the run's messages were too big for its result (Temporal's 2 MB
   * payload limit): `messages` then holds only the final message, and this many
   * earlier ones are left out. `handle.transcript()` pages through all of them.
   */
  messagesOmitted?: number;
  /**
   * Steering, follow-up or prompt messages that were accepted but never
   * processed (the run ended first), with the reason. Absent when none.
   */
  dropped?: DroppedMessage[];
}

/** Lifecycle of a run as reported by the `state` query. */
export type AgentRunStatus =
  | "running"
  | "waiting_for_approval"
  | "waiting_for_prompt"
  | "completed"
  | "failed"
  | "cancelled";

/** A tool call waiting for a person's decision. */
export interface PendingApproval {
  /** The model's id of the call; pass it to `approve`/`deny`. */
  toolCallId: string;
  /** The tool's name. */
  toolName: string;
  /** The arguments as the model sent them. */
  args: unknown;
  /** When the wait began (ISO 8601, workflow time). */
  since: string;
}

/** A person's decision on a pending tool call. */
export type ApprovalDecision = { approved: true } | { approved: false; reason?: string };

/** A tool call the run is executing or about to execute. */
export interface PendingToolCall {
  /** The model's id of the call. */
  toolCallId: string;
  /** The tool's name. */
  toolName: string;
  /** The arguments as the model sent them (before coercion). */
  args: unknown;
  /** Whether its activity has been scheduled. */
  started: boolean;
}

/** Answer of the `state` query. */
export interface AgentRunState {
  /** Where the run is. */
  status: AgentRunStatus;
  /** What the run is doing right now, e.g. "streaming" or "running tools". */
  phase: "starting" | "streaming" | "running_tools" | "done";
  /** Model calls started so far. */
  turn: number;
  /** Usage of the assistant messages so far. */
  usage: Usage;
  /** Tool calls of the current batch without a result yet. */
  pendingToolCalls: PendingToolCall[];
  /** Tool calls waiting for approval. */
  pendingApprovals: PendingApproval[];
  /** Steering messages not yet in the transcript. */
  queuedSteering: number;
  /** Follow-up messages not yet in the transcript. */
  queuedFollowUps: number;
  /** Messages in the transcript (all runs of a continued-as-new chain). */
  messageCount: number;
  /** Transcript messages held by earlier runs of the chain (continue-as-new). */
  earlierMessages: number;
  /** The run this one continued from, if any. */
  previousRunId?: string;
  /** Set once the run ended. */
  stopReason?: AgentStopReason;
  /** Set when the run ended on an error. */
  errorMessage?: string;
  /** Accepted messages that will not be processed, and why. */
  dropped?: DroppedMessage[];
}

/** Tool metadata the workflow needs; resolved once per run by the setup activity and kept in history. */
export interface ToolSpec {
  /** Tool name. */
  name: string;
  /** Description sent to the model. */
  description: string;
  /** JSON schema of the arguments, sent to the model. */
  parameters: TSchema;
  /** The tool's own execution mode, if it has one. */
  executionMode?: ToolExecutionMode;
  /** The tool's activity settings. */
  activity?: ToolActivityOptions;
  /** Whether calls need approval: always, or when the worker's predicate says so. */
  approval?: "always" | "predicate";
  /** The tool's approval timeout. */
  approvalTimeout?: Duration;
  /** The tool is `fast`: its calls run as local activities. */
  local?: boolean;
  /** Calls start a child agent run (see `agentTool`). */
  subAgent?: SubAgentSpec;
}

/** Output of the setup activity. */
export interface RunSetup {
  /** The model object the run uses for every call. */
  model: Model<Api>;
  /** The tools the run may call, in the worker's order. */
  tools: ToolSpec[];
  /**
   * The namespace has the agent's search attributes (AgentStatus, ...), as the
   * worker found them; recorded here so the workflow decides deterministically
   * whether to upsert them. Absent in histories recorded before they existed.
   */
  searchAttributes?: boolean;
  /**
   * The worker encrypts payloads (a payload codec): the run keeps content (the
   * prompt's first line) out of search attributes, which Temporal stores in plain text.
   */
  private?: boolean;
}

/** Input of the model activity. */
export interface StreamAssistantInput {
  /** Model to call. */
  model: Model<Api>;
  /** System prompt. */
  systemPrompt?: string;
  /**
   * The model's context, by reference: history would grow with the square of
   * the turns if every call carried the whole conversation. The worker keeps
   * each run's context in a cache; a call carries only what is new.
   */
  context: ModelContextRef;
  /** Tools offered to the model. */
  tools: Tool[];
  /** 1-based turn number, for logs. */
  turn: number;
  /** Answer with a `ModelReply` naming this worker's own task queue, where the run's next model call is sent. */
  route?: boolean;
  /** Stamp the reply with its finish time (`ModelReply.doneAtMs`); asked only by workflow code that reads it. */
  doneAt?: boolean;
}

/** A routed model call's answer: the reply, and the task queue only the answering worker polls (absent when it has none). */
export interface ModelReply {
  message: AssistantMessage;
  taskQueue?: string;
  /** How long this call waited in its queue before the worker picked it up (the worker's clock against the server's schedule time). */
  queueWaitMs?: number;
  /** When the call finished, on the worker's clock (epoch ms), when the call asked (`doneAt`): see `ExecuteToolOutput.doneAtMs`. */
  doneAtMs?: number;
}

/**
 * The model's context as a delta. Contract: the full context is the run's
 * `modelContext` messages [0, base) at `epoch`, followed by `append`, and its
 * digest is `digest`. A worker whose cache does not hold exactly that prefix
 * reads it from the workflow with the `modelContext` query (Temporal stays the
 * only source of truth); a worker never calls the model with a context of
 * another digest.
 */
export interface ModelContextRef {
  /** Bumped whenever earlier messages of the context are rewritten (compaction, continue-as-new). */
  epoch: number;
  /** How many context messages precede `append`. */
  base: number;
  /**
   * Messages added since the previous model call (details stripped). A tool
   * result an activity returned is already in history once: it rides as a
   * reference, resolved from the worker's copy of that activity's output or,
   * failing that, from the `modelContext` query.
   */
  append: (AgentMessage | ToolResultRef | UserInputRef)[];
  /**
   * SHA-256 digest of the whole context as the workflow recorded it (see
   * `contextDigest`). Absent only in calls recorded before it existed.
   */
  digest?: string;
}

/** A tool result in a model call's input, by reference to its tool activity's output. */
export interface ToolResultRef {
  /** Marks a reference. */
  ref: "toolResult";
  /**
   * The tool activity whose output this is (`tool-<turn>-<index>-<toolCallId>`),
   * unique in the run. Absent only in calls recorded before it existed (the worker then reads the result from the workflow).
   */
  activityId?: string;
  /** The model's id of the call (models may reuse ids: never a key). */
  toolCallId: string;
  /** The result message's timestamp, so the rebuilt message is the workflow's exactly. */
  timestamp: number;
}

/**
 * A user message in a model call's input, by reference to where history holds
 * it already (sent only when the new messages are too big to ride inline), so
 * the call still records every message it appends, in order.
 */
export interface UserInputRef {
  /** Marks a reference. */
  ref: "userInput";
  /**
   * Where the message is: `update:<updateId>` (a steer, followUp or prompt
   * update of this run), `carried:<queue>:<index>` (this run's input carried
   * it, queue `steering`, `followUps`, `prompts` or `pending`) or
   * `prompt:<index>` (the run's prompt: its only message, or one of its array).
   */
  source: string;
  /** The message's timestamp (a text input becomes a message stamped with the time it was taken up). */
  timestamp: number;
}

/** One page of the `modelContext` query. */
export interface ModelContextPage {
  /** The context's epoch; a cached prefix from another epoch is stale. */
  epoch: number;
  /** Messages in the whole context. */
  total: number;
  /** The page. */
  messages: AgentMessage[];
}

/** Input of the tool activity. */
export interface ExecuteToolInput {
  /** The model's id of the call. */
  toolCallId: string;
  /** Tool name (resolved in the worker). */
  toolName: string;
  /** The arguments as the model sent them; validated and coerced in the activity. */
  args: Record<string, unknown>;
  /** The run's result limits (the tool's own win). */
  limits?: ToolResultLimits;
  /** The id model calls use to refer to this output (a local activity's own id is not known to the workflow in advance). */
  outputKey?: string;
  /** Stamp the output with its finish time (`ExecuteToolOutput.doneAtMs`); asked only by workflow code that reads it. */
  doneAt?: boolean;
}

/** Output of a fast tool's local activity: its marker does not record the input, so the output names its call. */
export interface ExecuteFastToolOutput extends ExecuteToolOutput {
  /** The model's id of the call. */
  toolCallId: string;
  /** Tool name. */
  toolName: string;
  /** The `outputKey` model calls refer to the result with. */
  outputKey: string;
}

/** Output of the approval-check activity (for tools with an approval predicate). */
export interface PrepareToolOutput {
  /** Set when the arguments failed validation: the call ends with this error. */
  error?: string;
  /** Whether the predicate asks for a person's approval. */
  needsApproval: boolean;
}

/** Answer of `prompt()` in a session: what that prompt produced. */
export interface PromptResult {
  /** The prompt and the messages its turns added (only the last one when too big; see `messagesOmitted`). */
  messages: AgentMessage[];
  /** As in AgentRunResult. */
  messagesOmitted?: number;
  /** How that prompt's turns ended. */
  stopReason: AgentStopReason;
  /** Set when they ended on an error. */
  errorMessage?: string;
}

/** Output of the tool activity. */
export interface ExecuteToolOutput {
  /** What the tool returned, or the error result the loop made for it. */
  result: AgentToolResult;
  /** True when the call failed validation or `execute` threw. */
  isError: boolean;
  /**
   * The activity attempt that produced this output, when it was not the first: an earlier attempt's
   * worker stopped or froze (a tool's own errors are results, never retried), so the run stops sending its
   * model calls to the worker it last knew (which may be that one).
   */
  attempt?: number;
  /**
   * When the call finished, on the worker's clock (epoch ms; the workflow compares it with the server's time, so
   * worker clocks are assumed synchronized, as for `queueWaitMs`), set when the call asked (`doneAt`): old
   * workflow code never sees it, so the runs it recorded replay unchanged. From how late the workflow task that
   * took the output started, the workflow guesses whether a worker took that task and died with it
   * (`taskLost` in workflows/model-call.ts).
   */
  doneAtMs?: number;
}
