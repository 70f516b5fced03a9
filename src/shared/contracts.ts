/**
 * The contracts users write against: tools and their results, events, and a
 * run's input, result and state. Plain JSON wherever they cross Temporal (run
 * input and result, queries, updates): no Map, Date, AbortSignal or function.
 *
 * The seed's types (AgentTool, AgentToolResult, AgentEvent, ...) keep the
 * seed's names and fields, which are not pi-agent-core's everywhere:
 * docs/conformance.md lists where the two loops differ, among them
 * "event-field-names" (`message_update`'s event is `assistantEvent` and
 * `tool_execution_update`'s progress `partial`, without `args`; pi says
 * `assistantMessageEvent` and `partialResult`) and "plain-json-results"
 * (fields whose value is `undefined` vanish, results are capped). Fields only
 * a durable loop needs (AgentTool's activity settings, approval, result
 * limits, `idempotent`, `fast`, `subAgent`) are this project's, as are the
 * run types (input, result, state).
 *
 * `@default` names the constant that sets the default, where one does.
 * `Contract:` lines are promises the loop keeps (or asks of the user).
 * The types that cross the activity boundary or continue-as-new (RunSetup,
 * ToolSpec, ModelContextRef, ContinuedRun, …) are not contracts: they live
 * with the workflow code, in shared/wire.ts.
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
import type { WebhookTarget } from "./webhook-field.js";

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
  /** Stop after this batch. Contract: honoured only if EVERY result of the batch says true. */
  terminate?: boolean;
}

/** Progress callback handed to `execute`; each call becomes a `tool_execution_update` event. Contract: calls after `execute` settled are dropped. */
export type ToolUpdateCallback<TDetails = unknown> = (partial: AgentToolResult<TDetails>) => void;

/**
 * "parallel": may run concurrently with other parallel calls of the batch.
 * "sequential": never overlaps any other call of the batch.
 */
export type ToolExecutionMode = "sequential" | "parallel";

/**
 * Temporal activity settings of a tool's calls or a run's model calls; plain
 * JSON (durations as ms numbers or strings like "30s"). Each field left out
 * keeps the default: `TOOL_DEFAULTS` for tools ("10m" per attempt, "30s"
 * heartbeat, 3 attempts), `MODEL_DEFAULTS` for model calls ("10m", "30s", 8
 * attempts from 2 s doubling to 60 s), both in workflows/activity-proxies.ts.
 */
export interface AgentActivityOptions {
  /**
   * Longest a single attempt may run.
   * @default "10m" (`TOOL_DEFAULTS`, `MODEL_DEFAULTS` in workflows/activity-proxies.ts)
   */
  startToCloseTimeout?: Duration;
  /**
   * A dead worker is noticed after this long without a heartbeat (the activity heartbeats on a timer).
   * @default "30s" (`TOOL_DEFAULTS`, `MODEL_DEFAULTS` in workflows/activity-proxies.ts)
   */
  heartbeatTimeout?: Duration;
  /**
   * Temporal retry policy for infrastructure and transient provider failures (a thrown tool error is a result, never retried).
   * @default tools 3 attempts from 1 s doubling to 30 s (`TOOL_DEFAULTS`); model calls 8 from 2 s doubling to 60 s (`MODEL_DEFAULTS`)
   */
  retry?: RetryOptions;
}

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
  /**
   * Text kept, in bytes.
   * @default 51200 (50 KB; `DEFAULT_LIMITS` in worker/activities/result-limits.ts)
   */
  maxBytes?: number;
  /**
   * Text kept, in lines.
   * @default 2000 (`DEFAULT_LIMITS` in worker/activities/result-limits.ts)
   */
  maxLines?: number;
  /**
   * Largest image (base64 bytes) kept; a larger one becomes a note.
   * @default 1048576 (1 MB; `DEFAULT_LIMITS` in worker/activities/result-limits.ts)
   */
  maxImageBytes?: number;
  /**
   * Largest `details` (JSON bytes); larger ones are replaced by { truncated, bytes, preview }.
   * @default 65536 (64 KB; `DEFAULT_LIMITS` in worker/activities/result-limits.ts)
   */
  maxDetailsBytes?: number;
}

/** A tool the agent can call. It lives in the worker: the workflow only knows its metadata. */
export interface AgentTool<T extends TSchema = TSchema, TDetails = unknown> extends Tool<T> {
  /**
   * Human label for the UI.
   * @default the tool's `name`
   */
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
  activity?: AgentActivityOptions;
  /**
   * Ask a person before running: `true` always, or a predicate on the validated
   * arguments, evaluated in the worker. The run waits (a workflow condition, no
   * worker resources) until `approve`/`deny` or the approval timeout (denied).
   */
  requiresApproval?: boolean | ((args: Static<T>, toolCallId: string) => boolean | Promise<boolean>);
  /**
   * How long a call may wait for approval before it counts as denied.
   * @default the run's `approvalTimeout`, else forever
   */
  approvalTimeout?: Duration;
  /**
   * After cancellation, how long `execute` may take to honour its signal before it is abandoned.
   * @default 5000 (`DEFAULT_GRACE_MS` in worker/activities/tool.ts)
   */
  cancelGracePeriodMs?: number;
  /** This tool's result limits; they win over the run's `toolResultLimits`. */
  resultLimits?: ToolResultLimits;
  /**
   * false: never run a call twice. A call whose worker died mid-way is not
   * retried; its result says it was interrupted and the run goes on. (The same
   * as `activity.retry.maximumAttempts: 1`.)
   * @default true
   */
  idempotent?: boolean;
  /**
   * Quick (well under a minute), idempotent worker code, e.g. a lookup or a
   * computation: its calls run as Temporal local activities, in the worker
   * that runs the workflow, without a round trip through the task queue; the
   * result is recorded as a marker. A call may run again if that worker dies
   * before the result is recorded, so ignored when `idempotent` is false.
   * Local activities do not heartbeat: keep slow or streaming tools regular.
   * @default false
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
  /**
   * The worker's tools the child may use (names).
   * @default none
   */
  tools?: string[];
  /**
   * The child's most model calls.
   * @default 10 (`DEFAULT_SUB_AGENT_TURNS` in workflows/sub-agent.ts)
   */
  maxTurns?: number;
  /** The child's default tool execution mode. */
  toolExecution?: ToolExecutionMode;
  /**
   * Task queue of the child.
   * @default the parent's
   */
  taskQueue?: string;
  /**
   * How deep sub-agents may nest through this tool, the top-level run being
   * depth 0: a call made by a run at depth `maxDepth` (or deeper) starts no
   * child and gets an error tool result instead; 1 lets only a top-level run delegate.
   * @default 3 (`DEFAULT_SUB_AGENT_MAX_DEPTH` in workflows/sub-agent.ts)
   */
  maxDepth?: number;
  /**
   * The child's typed result (its run input's `output`): the parent's tool result is then the child's
   * validated output as JSON text, also in `details.subAgent.output`.
   * Contract: plain JSON Schema (a TypeBox schema is one); see docs/typed-results.md.
   * @default none: the result is the child's final text
   */
  output?: TSchema;
  /**
   * The child's `outputRetries`.
   * @default 2 (`DEFAULT_OUTPUT_RETRIES` in workflows/typed-output.ts)
   */
  outputRetries?: number;
}

/**
 * Everything the loop tells the outside world about a run, in order (pi-agent-core's order; see
 * docs/how-a-run-works.md, "Events"). Contract: exactly one `agent_end` per `agent_start`; every
 * `tool_execution_start` is followed by its `tool_execution_end`. Live: history is the record. Each event comes
 * with its `eventId` (`AgentEventRef`), by which a repeat is told from a new event.
 */
export type AgentEvent =
  | {
      /** A prompt's loop begins (a continued run's resumed loop emits none: its first run did). */
      type: "agent_start";
    }
  | {
      /** A prompt's loop ended. */
      type: "agent_end";
      /** The messages this prompt's loop added, its prompt first. */
      messages: AgentMessage[];
    }
  | {
      /** A turn begins: input enters, then one model call. */
      type: "turn_start";
    }
  | {
      /** A turn ended. */
      type: "turn_end";
      /** The turn's assistant message. */
      message: AssistantMessage;
      /** Its tool calls' results, in the order the model asked for them. */
      toolResults: ToolResultMessage[];
    }
  | {
      /** A message begins (a model's: it streams; any other: it is whole). */
      type: "message_start";
      /** The message so far. */
      message: AgentMessage;
    }
  | {
      /** The model's message grew (emitted by the model activity; a retried call streams again). */
      type: "message_update";
      /** The message so far. */
      message: AssistantMessage;
      /** The provider's event (the seed's name; pi says `assistantMessageEvent`). */
      assistantEvent: AssistantMessageEvent;
    }
  | {
      /** A message is complete and in the transcript. */
      type: "message_end";
      /** The whole message. */
      message: AgentMessage;
    }
  | {
      /** A tool call is announced (it may still wait for approval or be skipped by steering). */
      type: "tool_execution_start";
      /** The model's id of the call. */
      toolCallId: string;
      /** The tool's name. */
      toolName: string;
      /** The arguments as the model sent them. */
      args: unknown;
    }
  | {
      /** Progress the tool reported through `onUpdate` (emitted by the tool activity). */
      type: "tool_execution_update";
      /** The model's id of the call. */
      toolCallId: string;
      /** The tool's name. */
      toolName: string;
      /** The progress (the seed's name, without `args`; pi says `partialResult`). */
      partial: AgentToolResult;
    }
  | {
      /** A tool call finished (or was aborted by a cancel). */
      type: "tool_execution_end";
      /** The model's id of the call. */
      toolCallId: string;
      /** The tool's name. */
      toolName: string;
      /** What the tool returned, or the error result the loop made for it. */
      result: AgentToolResult;
      /** True when the call failed (invalid arguments, a throw, a denial, a skip, a cancel). */
      isError: boolean;
    };

/** Identifies the run an event belongs to. */
export interface AgentRunRef {
  /** Temporal workflow id of the run. */
  workflowId: string;
  /** Temporal run id (changes on continue-as-new). */
  runId: string;
}

/** Identifies one event of a run: the run, and the event in it. What `onEvent` gets beside the event. */
export interface AgentEventRef extends AgentRunRef {
  /**
   * The event's identity in its run's stream (one per workflow id, across continue-as-new): the same however
   * often the event is delivered, different for different events. `<runId>/<n>.<digest>` for the n-th event the
   * run's workflow code emitted (n is computed from workflow state, which a retried workflow task recomputes
   * identically; the digest is of what the event says but its timestamps, so a retry that took another path
   * emits another id at that n); `<runId>/<activityId>@<attempt>/<n>` for the n-th of an activity attempt (token
   * deltas, tool progress, a model's `message_start`; a retried activity is a new attempt whose events are new).
   * See docs/streaming.md, "Repeats", and src/shared/event-ids.ts (`EventDeduper`).
   */
  eventId: string;
}

/**
 * Receives every event of every run the worker serves. Contract: must not throw; slow sinks slow the worker.
 * Contract: at least once, not exactly once: a workflow task that is retried (it timed out on a busy worker, its
 * worker died before completing it, or the server refused it) delivers the events it emitted again, with the same
 * `ref.eventId`; drop an event whose `eventId` was seen (`EventDeduper`; the event tap, SSE, `handle.events()`
 * and the console do). Events of one emitter (the run's workflow code, or one activity attempt) arrive in order.
 */
export type AgentEventSink = (event: AgentEvent, ref: AgentEventRef) => void | Promise<void>;

/** A model: an `@jai/ai` Model object, or `"provider/modelId"` resolved in the worker. */
export type ModelRef = Model<Api> | string;

/** Why a run ended ("budget": a limit of its `budget` was reached; `budgetExceeded` says which). */
export type AgentStopReason = "stop" | "length" | "error" | "aborted" | "terminate" | "max_turns" | "budget";

/** A limit of `AgentBudget`. */
export type BudgetLimit = "maxTokens" | "maxCostUsd" | "maxToolCalls" | "maxDuration";

/**
 * What a run may spend at most, its sub-agents included (a child's spend counts against its parent's budget,
 * and a child never gets more than what its parent has left). Checked before each model call, against the most
 * the call may cost (its `maxTokens` at the model's prices), and after each; a tool batch always finishes: a run
 * never ends mid-tool. Reaching a limit ends the run (a session: the prompt, and the session closes) with
 * stopReason "budget" and `budgetExceeded` naming the limit. Counts across continue-as-new.
 */
export interface AgentBudget {
  /** Most tokens of model calls (input + output + cache reads and writes), the chain's and its sub-agents'. */
  maxTokens?: number;
  /** Most cost in US dollars at the models' prices (`model.cost`, per million tokens). */
  maxCostUsd?: number;
  /** Most tool calls the model may make (every call of a batch counts, run or denied), sub-agents' included; 0: none. */
  maxToolCalls?: number;
  /** Longest time from the run's start (the first run of a continue-as-new chain): ms, or a duration like "10m". */
  maxDuration?: Duration;
}

/** What a run has spent against its budget (the `state` query, `AgentRunResult`). */
export interface BudgetSpend {
  /** Tokens so far, sub-agents' included. */
  tokens: number;
  /** US dollars so far, sub-agents' included. */
  costUsd: number;
  /** Tool calls executed so far, sub-agents' included. */
  toolCalls: number;
  /** Milliseconds since the chain started (workflow time). */
  elapsedMs: number;
  /** What is left of each limit the budget sets (absent: no such limit). */
  left: { tokens?: number; costUsd?: number; toolCalls?: number; durationMs?: number };
}

/** Input of the `agentRun` workflow. Plain JSON; validated when the run starts. */
export interface AgentRunInput {
  /**
   * The model to call; a string is resolved by the worker (its `models` option, then `@jai/ai`'s catalogue).
   * A list is a fallback chain: the first model takes every call; when its provider is down, overloaded,
   * rate-limited past its retries or the model is gone (the classifier says so), the next one takes that call.
   * Each assistant message names the model that answered it.
   */
  model: ModelRef | ModelRef[];
  /**
   * What the run may spend at most (see AgentBudget).
   * @default no limit but `maxTurns`
   */
  budget?: AgentBudget;
  /** System prompt sent with every model call. */
  systemPrompt?: string;
  /**
   * A string or user message starts a new conversation turn; a list of messages is a
   * transcript to continue from (its last message must be a user or tool result message).
   */
  prompt: string | UserMessage | AgentMessage[];
  /**
   * Names of the worker's tools this run may use.
   * @default all of them
   */
  tools?: string[];
  /**
   * Execution mode of tool calls whose tool has none.
   * @default "parallel" (`DEFAULT_TOOL_EXECUTION` in workflows/tool-calls.ts)
   */
  toolExecution?: ToolExecutionMode;
  /**
   * Most model calls of one prompt; the prompt then ends with stopReason "max_turns".
   * @default 50 (`DEFAULT_MAX_TURNS` in workflows/agent-run.ts)
   */
  maxTurns?: number;
  /** Temporal settings of the model activity. */
  modelActivity?: AgentActivityOptions;
  /**
   * Keep the run open after it would end, waiting for `prompt()` updates, until
   * `close()` or the idle timeout. `maxTurns` then limits each prompt.
   * @default false
   */
  session?:
    | boolean
    | {
        /**
         * How long the session waits for its next prompt before it ends.
         * @default "1h" (`DEFAULT_IDLE_TIMEOUT` in workflows/agent-run.ts)
         */
        idleTimeout?: Duration;
      };
  /**
   * Approval timeout of tools that require approval and set none of their own.
   * @default none: wait forever
   */
  approvalTimeout?: Duration;
  /**
   * Which tool calls run, wait for a person or are refused: ordered rules on tool names, then a default
   * (docs/policies.md). An operator changes it while the run runs with `handle.setApprovalPolicy()`, never
   * below `approvalPolicyFloor`.
   * Contract: each batch follows the policy as it stood when the batch began.
   * @default none: each tool's own `requiresApproval` decides
   */
  approvalPolicy?: ApprovalPolicy;
  /**
   * Policies this run can never loosen (docs/policies.md#a-floor-no-one-loosens): every call is judged by each of
   * them and by `approvalPolicy` as it stands, and the strictest verdict wins (deny > ask > tool > allow), whatever
   * `setApprovalPolicy` sets later; `remember` never runs a call they deny. Named agents set it to their policy
   * (`agentRunOptions`), and a run passes its floor and its policy on to its sub-agents.
   * Contract: 1-32 valid policies; fixed for the run's life (continue-as-new included).
   * @default none
   */
  approvalPolicyFloor?: ApprovalPolicy[];
  /**
   * Tools a client runs, not a worker: the model is offered them, and a call waits durably (no worker held)
   * until a client submits its result with `handle.submitToolResult()` (docs/policies.md).
   * Contract: names are unique and differ from the worker's tools (a clash fails the run as InvalidRunInput).
   * @default none
   */
  clientTools?: ClientToolDeclaration[];
  /** Result limits for every tool of the run (a tool's own `resultLimits` win). */
  toolResultLimits?: ToolResultLimits;
  /**
   * Token budget of the model's context.
   * @default the model's context window less room for its answer (`contextBudget` in workflows/compaction.ts)
   */
  contextBudgetTokens?: number;
  /**
   * How the context is brought back under budget: shorten the oldest tool
   * results, or the worker's `compactContext` function (e.g. an LLM
   * summary), run as its own activity; it falls back to the default on failure.
   * @default "truncate-tool-results"
   */
  compaction?: "truncate-tool-results" | "worker";
  /**
   * Continue-as-new: always when Temporal suggests it (history ~4 MB / 4k events);
   * `afterTurns` also after that many model calls in one run (between turns; a
   * session between prompts). Transparent: same workflow id, same result.
   */
  continueAsNew?: {
    /**
     * Also continue as new after this many model calls in one run.
     * @default none: only when Temporal suggests it
     */
    afterTurns?: number;
  };
  /**
   * POST the run's outcome here when it ends, however it ends, signed with the
   * worker's secret of that name (HMAC-SHA256 of the body in `x-jai-signature`).
   */
  webhook?: WebhookTarget;
  /**
   * A typed result: the JSON Schema (a TypeBox schema is one) the run's final answer must match. The model is
   * offered a `final_answer` tool whose parameters are this schema (an object schema as it is, any other
   * wrapped as `{ value }`); the prompt ends when it calls it alone with valid arguments (or answers with
   * JSON text that is valid), and `result().output` holds the answer. An invalid answer goes back to the
   * model with the validation error, for another turn (see `outputRetries`). See docs/typed-results.md.
   * Contract: plain JSON (TypeBox's symbols are dropped on the way); `$ref`s local (`#…`) and `pattern`s in
   * RE2 syntax (no lookaround or backreferences), else refused at start; validated in the worker with AJV in a
   * thread of its own (its own instance per schema, 5 s per check), which coerces as for tool arguments
   * (`"3"` → `3`). See docs/security.md "Schemas a run brings".
   * @default none: the answer is the last message's text
   */
  output?: TSchema;
  /**
   * How many invalid final answers the model may correct: one more and the prompt ends with stopReason
   * "error" and an `errorMessage` naming the validation error. Only with `output`.
   * @default 2 (`DEFAULT_OUTPUT_RETRIES` in workflows/typed-output.ts)
   */
  outputRetries?: number;
}

/**
 * What a policy rule does with a call: `allow` runs it without asking (even when the tool requires approval),
 * `ask` waits for a person, `deny` refuses it (an error result the model sees, with the reason), `tool` leaves
 * it to the tool's own `requiresApproval` (flag or predicate).
 */
export type ApprovalAction = "allow" | "ask" | "deny" | "tool";

/** One rule of an approval policy. */
export interface ApprovalRule {
  /**
   * A tool name, exact or a glob: `*` any run of characters, `?` one character (MCP tools are
   * `<server>__<tool>`, so `github__*` is every tool of server "github").
   * Contract: 1-200 characters.
   */
  match: string;
  /** What happens to a call whose tool name matches. */
  action: ApprovalAction;
  /** Why, shown to the model when the rule denies a call. Contract: at most 1000 characters. */
  reason?: string;
}

/**
 * Which tool calls run, wait for a person or are refused. The first rule whose `match` matches the tool's name
 * decides; when none does, `default`. A tool a person approved with `remember` runs without asking for the
 * rest of the run, unless a rule (of the policy or of the run's floor) denies it. Plain JSON.
 */
export interface ApprovalPolicy {
  /**
   * Ordered rules, first match wins.
   * Contract: at most 100.
   * @default none
   */
  rules?: ApprovalRule[];
  /**
   * What happens when no rule matches.
   * @default "tool" (the tool's own `requiresApproval`)
   */
  default?: ApprovalAction;
}

/** Options of `approve`. */
export interface ApproveOptions {
  /**
   * Approve and stop asking: later calls of this tool in this run (continue-as-new included) run without
   * waiting for a person, and so do calls of it waiting now. Contract: a `deny` rule still refuses them.
   * @default false
   */
  remember?: boolean;
}

/**
 * A tool a client runs (a browser, an app, a person with a form): the model is offered it like any tool;
 * when the model calls it, the run waits until a client submits the result (`handle.submitToolResult`,
 * `POST /runs/:id/tool-result`, `jai-agent tool-result`). Plain JSON.
 */
export interface ClientToolDeclaration {
  /** The tool's name. Contract: 1-64 letters, digits, "_" or "-"; unique in the run; not a worker tool's. */
  name: string;
  /** Description sent to the model. */
  description: string;
  /** JSON schema of the arguments, sent to the model. Contract: an object schema (plain JSON). */
  parameters: Record<string, unknown>;
  /**
   * JSON schema a submitted result must satisfy (checked by the run: a result that does not is refused to
   * its submitter, and the call keeps waiting). Checked keywords: type, properties, required,
   * additionalProperties, items, enum, const, anyOf, oneOf, allOf, minimum, maximum, minLength, maxLength,
   * minItems, maxItems, pattern; others are ignored. Contract: `$ref`s local and `pattern`s in RE2 syntax (else
   * refused at start); a result too costly to check (counted work, see docs/security.md) is refused.
   * @default any JSON value
   */
  result?: Record<string, unknown>;
  /**
   * How long a call waits for its result; then it ends with an error result the model sees.
   * @default forever
   */
  timeout?: Duration;
}

/** Options of `submitToolResult`. */
export interface SubmitToolResultOptions {
  /**
   * The client's tool failed: `result` is what went wrong, the model sees it as an error result (the result
   * schema is not checked).
   * @default false
   */
  isError?: boolean;
}

/** A client tool call waiting for a client to submit its result. */
export interface PendingClientResult {
  /** The model's id of the call; pass it to `submitToolResult`. */
  toolCallId: string;
  /** The client tool's name. */
  toolName: string;
  /** The arguments as the model sent them. */
  args: unknown;
  /** When the wait began (ISO 8601, workflow time). */
  since: string;
  /** The tool's `timeout`, when it has one. */
  timeout?: Duration;
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

/** What a run returns (`TOutput`: the type of its typed `output`, when the run has one). */
export interface AgentRunResult<TOutput = unknown> {
  /** This run's new messages, the prompt first (none of a continued transcript's earlier messages). */
  messages: AgentMessage[];
  /** Why the run ended. */
  stopReason: AgentStopReason;
  /** Model calls made. */
  turns: number;
  /** Sum of the usage of every assistant message of the run. */
  usage: Usage;
  /** Set when `stopReason` is "error" or "aborted", and with "budget" (what was spent, against which limit). */
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
  /**
   * The validated final answer of a run with `output` (of a session: its last prompt's).
   * Contract: set exactly when the answer passed the schema (`stopReason` "stop"); absent when validation
   * failed past `outputRetries` (`stopReason` "error", `errorMessage` says why) or the run ended otherwise.
   */
  output?: TOutput;
  /** Set when `stopReason` is "budget": the limit that ended the run (`errorMessage` says what was spent). */
  budgetExceeded?: BudgetLimit;
  /** What the run spent against its `budget`; set exactly when the run has one. */
  spend?: BudgetSpend;
}

/** Lifecycle of a run as reported by the `state` query. */
export type AgentRunStatus =
  | "running"
  | "waiting_for_approval"
  /** A client tool call waits for a client's result and nothing else of its batch runs (issue #41). */
  | "waiting_for_client"
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
export type ApprovalDecision =
  | {
      /** Approved: the call runs. */
      approved: true;
    }
  | {
      /** Denied: the call ends with an error result the model sees. */
      approved: false;
      /** Why, shown to the model in that result. */
      reason?: string;
    };

/** A tool call the run is executing or about to execute. */
export interface PendingToolCall {
  /** The model's id of the call. */
  toolCallId: string;
  /** The tool's name. */
  toolName: string;
  /** The arguments as the model sent them (before coercion). */
  args: unknown;
  /**
   * Whether the tool's execution has started (its activity or child run was
   * scheduled). Contract: false while the call waits for approval or for its
   * turn in the batch, and for a call that never ran (skipped by steering, denied).
   */
  started: boolean;
  /** True while the call waits for a person's decision (it is in `pendingApprovals` too); absent otherwise. */
  waitingForApproval?: boolean;
  /** True while a client tool call waits for its result (it is in `pendingClientResults` too); absent otherwise. */
  waitingForClient?: boolean;
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
  /** The run's approval policy as it stands (the next batch follows it); absent when it has none. */
  approvalPolicy?: ApprovalPolicy;
  /** Tools a person approved with `remember`: they run without asking for the rest of the run. Absent when none. */
  rememberedTools?: string[];
  /** The policies this run can never loosen (its input's `approvalPolicyFloor`). Absent when none. */
  approvalPolicyFloor?: ApprovalPolicy[];
  /** Client tool calls waiting for a client to submit their result. Absent when none. */
  pendingClientResults?: PendingClientResult[];
  /** What the run has spent against its `budget` and what is left; set exactly when the run has one. */
  spend?: BudgetSpend;
  /** Set once a limit of the budget ended the run (stopReason "budget"). */
  budgetExceeded?: BudgetLimit;
  /** A run with a typed `output`: the last prompt's validated final answer, once it has one (as in the result). */
  output?: unknown;
}

/** Tool metadata the workflow needs; resolved once per run by the setup activity and kept in history. */
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
  /**
   * A run with a typed `output`: this prompt's validated final answer.
   * Contract: as `AgentRunResult.output`, for this prompt.
   */
  output?: unknown;
}
