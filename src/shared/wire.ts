/**
 * The wire types of the workflow: what crosses the activity boundary (setup,
 * model and tool activities) and what a run carries across continue-as-new.
 * Plain JSON, recorded in history, so a field is only ever added, optional,
 * and old histories that lack it replay (see README, "Changing the loop").
 * None of them is a user contract: those are in ../contracts.ts.
 */
import type { SpendCarry } from "./budget-checks.js";
import type { Api, AssistantMessage, Model, Tool, Usage, UserMessage } from "@jai/ai";
import type { Duration } from "@temporalio/common";
import type { TSchema } from "@sinclair/typebox";
import type {
  AgentMessage,
  AgentRunInput,
  ApprovalPolicy,
  AgentStopReason,
  AgentToolResult,
  DroppedMessage,
  SubAgentSpec,
  AgentActivityOptions,
  ToolExecutionMode,
  ToolResultLimits,
} from "./contracts.js";

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
  /** A session waiting for its next prompt: its last prompt's typed output (the result's, if it is closed now). */
  output?: unknown;
  /** The approval policy as it stands (an operator may have changed it) and the tools approved with `remember`. */
  approvals?: {
    policy?: ApprovalPolicy;
    remembered?: string[];
  } /** A run with a `budget`: its tool calls so far and when the chain started (tokens and cost are in `usage`). */;
  spend?: SpendCarry;
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
  /** Typed output: the prompt's validated final answer (the inbox records the loop's outcome as it is). */
  output?: unknown;
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
  /** Typed output: this prompt's final answers that failed validation so far (absent: none). */
  outputFailures?: number;
}

/** Input of the `checkOutput` local activity: one candidate final answer of a run with a typed `output`. */
export interface CheckOutputInput {
  /** The run's `output` schema (plain JSON Schema). */
  schema: TSchema;
  /** The candidate: the `final_answer` call's arguments, or the text of an answer without tool calls. */
  candidate: { args: Record<string, unknown> } | { text: string };
}

/**
 * Output of the `checkOutput` local activity: the validated (and coerced) output, or the error the model
 * gets; `fatal`: no answer can pass (the schema itself is unusable, or the check failed): the prompt ends.
 */
export type CheckOutputVerdict = { ok: true; output: unknown } | { ok: false; error: string; fatal?: boolean };

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
  activity?: AgentActivityOptions;
  /** Whether calls need approval: always, or when the worker's predicate says so. */
  approval?: "always" | "predicate";
  /** The tool's approval timeout. */
  approvalTimeout?: Duration;
  /** The tool is `fast`: its calls run as local activities. */
  local?: boolean;
  /** Calls start a child agent run (see `agentTool`). */
  subAgent?: SubAgentSpec;
  /** A client tool (declared in the run's input): a call waits for a client's result instead of running. */
  client?: { result?: Record<string, unknown>; timeout?: Duration };
}

/** Output of the setup activity. */
export interface RunSetup {
  /** The model object the run uses for every call (the first of its chain). */
  model: Model<Api>;
  /**
   * The rest of a fallback chain (`model` given as a list), in order: each takes a call the one before it failed
   * for want of its provider (down, overloaded, rate-limited past its retries) or because the model is gone.
   */
  fallbacks?: Model<Api>[];
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
  /**
   * The worker keeps payloads too big for history in a blob store (External Storage, docs/large-payloads.md): the
   * run's result and prompt answers carry their messages whole up to `STORED_RESULT_MESSAGE_BYTES` (32 MB), not 1.5 MB.
   * Recorded, so replays agree; absent from histories recorded before it existed and from workers without a store.
   */
  blobStore?: boolean;
  /**
   * The own queue of the worker that answered a setup run as a regular activity: the one taken to any worker of
   * the queue after the local setup's worker lacked the run's model. That worker serves the model, so the run's
   * first model call goes to its queue rather than to whichever worker of the shared queue polls first. Absent
   * from local setups and from histories recorded before it existed.
   */
  taskQueue?: string;
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
  /** The answering worker's sticky queue timeout (ms): its runs' next calls wait that long for it (routing.ts). */
  stickyMs?: number;
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

/** Output of the tool activity. */
export interface ExecuteToolOutput {
  /** What the tool returned, or the error result the loop made for it. */
  result: AgentToolResult;
  /** True when the call failed validation or `execute` threw. */
  isError: boolean;
  /**
   * With a blob store (docs/large-payloads.md) `result` is whole (up to the store's `maxResultBytes`) and, when the
   * run's `toolResultLimits` cut it, this is the model's copy of its content: what the model's context holds
   * (transcript: `result`). Absent: the model sees `result.content`.
   */
  modelContent?: AgentToolResult["content"];
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
   * (`taskLost` in workflows/routing.ts).
   */
  doneAtMs?: number;
}
