/** startAgentRun / getAgentRun: typed handles on agent runs for any @temporalio/client Client. */
import { randomUUID } from "node:crypto";
import { SpanKind, SpanStatusCode, trace } from "@opentelemetry/api";
import { status as grpcStatus } from "@grpc/grpc-js";
import {
  ServiceError,
  WorkflowFailedError,
  WorkflowUpdateFailedError,
  type Client,
  type WorkflowHandle,
} from "@temporalio/client";
import {
  ApplicationFailure,
  TypedSearchAttributes,
  WorkflowNotFoundError,
  type Priority,
  type SearchAttributePair,
  type UpdateDefinition,
} from "@temporalio/common";
import type { Static, TSchema } from "@sinclair/typebox";
import type {
  AgentMessage,
  AgentRunInput,
  AgentRunResult,
  AgentRunState,
  ApprovalPolicy,
  ApproveOptions,
  PromptResult,
  SubmitToolResultOptions,
} from "../shared/contracts.js";
import {
  AGENT_RUN_FAILED,
  AGENT_RUN_WORKFLOW,
  approveUpdate,
  DEFAULT_TASK_QUEUE,
  closeUpdate,
  denyUpdate,
  followUpUpdate,
  promptAnswerUpdate,
  promptUpdate,
  setApprovalPolicyUpdate,
  stateQuery,
  steerUpdate,
  submitToolResultUpdate,
  transcriptQuery,
  type UserInput,
} from "../shared/definitions.js";
import { approvalPolicyProblem } from "../shared/approval-rules.js";
import { validateRunInput, validateUserInput } from "../shared/run-input.js";
import { promptSummary } from "../shared/summary.js";
import { closedRunStateOnly, closedRunView } from "./history-view.js";
import { runEvents, type RunEvent, type RunEventsOptions } from "./events/subscribe.js";
import { primaryModelName } from "../shared/model-ref.js";
import { tenantConfig, tenantLimiter, tenantProblem, type TenantsConfig } from "../shared/tenants.js";
import { AgentTenant } from "../shared/search-attributes.js";

export type { RunEvent, RunEventsOptions };

/** Thrown by startAgentRun for input the workflow would reject; nothing is started. */
export class InvalidRunInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "InvalidRunInputError";
  }
}

/** Thrown by updates and `cancel()` on a run that has already ended; nothing was sent to it. */
export class RunFinishedError extends Error {
  constructor(
    /** Workflow id of the run. */
    readonly workflowId: string,
    /** How it ended: its stopReason when it returned a result, else Temporal's status (e.g. "terminated"). */
    readonly outcome: string,
  ) {
    super(`run ${workflowId} finished with ${outcome}`);
    this.name = "RunFinishedError";
  }
}

/** Thrown when a run refuses an update (its validator's reason, e.g. no such pending approval), or the update is too big to send. */
export class RunUpdateRejectedError extends Error {
  constructor(
    /** The update: "steer", "followUp", "prompt", "close", "approve", "deny", "setApprovalPolicy" or "submitToolResult". */
    readonly update: string,
    /** Why, in the run's (or the server's) words. */
    readonly reason: string,
  ) {
    super(`${update} rejected: ${reason}`);
    this.name = "RunUpdateRejectedError";
  }
}

/** Temporal's default payload size limit: a bigger start input or update is refused by the server (an update even terminates the run). */
export const TEMPORAL_PAYLOAD_LIMIT_BYTES = 2 * 1024 * 1024;

const jsonBytes = (value: unknown) => Buffer.byteLength(JSON.stringify(value) ?? "", "utf8");
const mb = (bytes: number) => `${(bytes / (1024 * 1024)).toFixed(1)} MB`;
/** Server errors that mean "too big", whatever RPC carried them. */
const TOO_BIG = /size exceeds limit|exceeds size limit|larger than max|payload.*too large|message too large/i;
const errorText = (err: unknown) =>
  err instanceof Error ? `${err.message} ${err.cause instanceof Error ? err.cause.message : ""}` : String(err);

/** How a closed run ended, for RunFinishedError. */
async function finishedOutcome(workflow: WorkflowHandle): Promise<string | undefined> {
  const status = (await workflow.describe()).status.name;
  if (status === "RUNNING") return undefined;
  if (status !== "COMPLETED" && status !== "FAILED") return status.toLowerCase();
  try {
    return (await runResult(workflow)).stopReason;
  } catch {
    return status.toLowerCase();
  }
}

/**
 * A run's result. A run that ended with stopReason "error" fails (so the
 * Temporal UI, metrics and alerts count it as failed) with an ApplicationFailure
 * of type "AgentRunFailed" whose details carry the result: it is returned like
 * any other. Other failures (invalid input, termination, ...) are thrown.
 */
export async function runResult(workflow: WorkflowHandle): Promise<AgentRunResult> {
  try {
    return (await workflow.result()) as AgentRunResult;
  } catch (err) {
    const result = agentRunFailedResult(err);
    if (result) return result;
    throw err;
  }
}

/** The AgentRunResult inside a WorkflowFailedError of a run that ended with stopReason "error"; undefined for any other error. */
export function agentRunFailedResult(err: unknown): AgentRunResult | undefined {
  if (!(err instanceof WorkflowFailedError)) return undefined;
  const cause = err.cause;
  if (!(cause instanceof ApplicationFailure) || cause.type !== AGENT_RUN_FAILED) return undefined;
  return cause.details?.[0] as AgentRunResult | undefined;
}

/** Sends an update, turning what the caller got wrong into typed errors. */
async function sendUpdate<R>(
  workflow: WorkflowHandle,
  name: string,
  args: unknown[],
  send: () => Promise<R>,
): Promise<R> {
  const bytes = jsonBytes(args);
  if (bytes > TEMPORAL_PAYLOAD_LIMIT_BYTES) {
    throw new RunUpdateRejectedError(
      name,
      `its input is ${mb(bytes)} (${bytes} bytes), over Temporal's payload limit of ${mb(TEMPORAL_PAYLOAD_LIMIT_BYTES)}`,
    );
  }
  try {
    return await send();
  } catch (err) {
    if (err instanceof WorkflowUpdateFailedError)
      throw new RunUpdateRejectedError(name, err.cause?.message ?? err.message);
    if (err instanceof WorkflowNotFoundError) {
      const outcome = await finishedOutcome(workflow).catch(() => undefined);
      if (outcome) throw new RunFinishedError(workflow.workflowId, outcome);
    }
    if (TOO_BIG.test(errorText(err))) {
      throw new RunUpdateRejectedError(
        name,
        `its input is ${mb(bytes)} (${bytes} bytes), over the server's payload limit: ${errorText(err).trim()}`,
      );
    }
    throw withServerReason(err);
  }
}

/** The gRPC status under a ServiceError (code and details), if any. */
function grpcCause(err: unknown): { code?: unknown; details?: unknown } | undefined {
  return (err as { cause?: { code?: unknown; details?: unknown } } | undefined)?.cause;
}

/** The SDK's "Workflow Update failed" says nothing of why: name the server's status and reason in the message. */
function withServerReason(err: unknown): unknown {
  const cause = grpcCause(err);
  if (err instanceof ServiceError && typeof cause?.code === "number" && cause.details)
    err.message = `${err.message}: ${grpcStatus[cause.code] ?? cause.code} ${String(cause.details)}`;
  return err;
}

/** Attempts at one update when its workflow task keeps failing under it (about 10 s in all). */
const UPDATE_ATTEMPTS = 8;

/**
 * True for the server's "update aborted because its workflow task failed" (FAILED_PRECONDITION,
 * WorkflowNotReady): the update reached a workflow task that failed while completing (a worker shutting
 * down, a lost sticky queue), so nothing of it was recorded. The server retries the task but leaves the
 * update to the caller.
 */
function isUpdateTaskFailure(err: unknown): boolean {
  const cause = grpcCause(err);
  return cause?.code === grpcStatus.FAILED_PRECONDITION && /workflow task failure/i.test(String(cause.details ?? ""));
}

/**
 * `send` under one update ID, sent again while the server reports that the workflow task carrying it
 * failed. The fixed ID makes a repeat safe: an update the run did accept is answered from history, never
 * applied twice.
 */
async function deliverUpdate<R>(send: (options: { updateId: string }) => Promise<R>): Promise<R> {
  const updateId = randomUUID();
  for (let attempt = 1; ; attempt++) {
    try {
      return await send({ updateId });
    } catch (err) {
      if (attempt >= UPDATE_ATTEMPTS || !isUpdateTaskFailure(err)) throw err;
      await new Promise((resolve) => setTimeout(resolve, Math.min(2000, 100 * 2 ** attempt)));
    }
  }
}

/** The biggest field of a run input, to name in a size error. */
function biggestField(input: AgentRunInput): { field: string; bytes: number } {
  return Object.entries(input)
    .map(([field, value]) => ({ field, bytes: jsonBytes(value) }))
    .reduce((a, b) => (b.bytes > a.bytes ? b : a), { field: "input", bytes: 0 });
}

function tooBigInput(input: AgentRunInput, detail?: string): InvalidRunInputError {
  const total = jsonBytes(input);
  const { field, bytes } = biggestField(input);
  return new InvalidRunInputError(
    `Invalid run input: ${field} is ${mb(bytes)} (${bytes} bytes); the whole input is ${total} bytes, over Temporal's payload limit of ${mb(TEMPORAL_PAYLOAD_LIMIT_BYTES)} (${TEMPORAL_PAYLOAD_LIMIT_BYTES} bytes)${detail ? `: ${detail}` : ""}`,
  );
}

export interface StartAgentRunOptions extends AgentRunInput {
  /** Task queue of the workers; default "jai-agent". */
  taskQueue?: string;
  /** Workflow id; default "agent-<uuid>". */
  workflowId?: string;
  /**
   * Temporal's workflow task timeout (default 10 s): after a worker dies in the
   * middle of a workflow task, the run waits this long before another worker
   * takes it up. Loop decisions take milliseconds, so a few seconds is plenty.
   */
  workflowTaskTimeout?: string | number;
  /**
   * The run's line in the Temporal UI's workflow list; default: the first line
   * of the prompt. (Temporal sets it at start only: runs started elsewhere, e.g.
   * `temporal workflow start`, pass `--static-summary`.)
   */
  staticSummary?: string;
  /** Longer text shown on the run's page (markdown). */
  staticDetails?: string;
  /** The caller's own search attributes (registered in the namespace), besides the agent's own (see search-attributes.ts). */
  searchAttributes?: SearchAttributePair[] | TypedSearchAttributes;
  /** The caller's own memo fields (the run adds model, tools, stopReason, turns, totalTokens). */
  memo?: Record<string, unknown>;
  /**
   * Eager workflow start: the server hands the run's first workflow task straight
   * back to a worker in this process, skipping a trip through matching (the run
   * reaches its model sooner). Contract: `client` is `agentWorker.client` (or any
   * client on the NativeConnection of a worker in this process that polls
   * `taskQueue`); Temporal refuses a client on a plain Connection with an error.
   * A server without `system.enableEagerWorkflowStart` starts the run the ordinary way.
   */
  eagerStart?: boolean;
  /**
   * Who the run is for (docs/tenants.md): 1-64 letters, digits, ".", "_", "-". Sets the `AgentTenant` search
   * attribute (left out on a namespace without it) and Temporal's priority `fairnessKey` on the run, which its
   * activities and sub-agents inherit; with fairness on in the server, one tenant's backlog does not starve another's.
   */
  tenant?: string;
  /**
   * Per-tenant limits enforced at this start (the config module's `tenants`): the tenant's entry, else `"*"`'s.
   * `maxConcurrentRuns` refuses with TenantLimitError; `budget` fills a run given none; `fairnessWeight`.
   */
  tenants?: TenantsConfig;
}

/** A handle on a run; `TOutput`: the type of its typed `output` (see startAgentRun). */
export interface AgentRunHandle<TOutput = unknown> {
  /** Workflow id of the run. */
  readonly workflowId: string;
  /** The Temporal handle underneath (signals, describe, terminate, ...). */
  readonly workflow: WorkflowHandle;
  /** Waits for the run to end. */
  result(): Promise<AgentRunResult<TOutput>>;
  /** Status, turn, usage and pending tool calls. */
  state(): Promise<AgentRunState>;
  /** The transcript: all of it (fetched page by page, each under ~400 KB), or `limit` messages from `offset`. */
  transcript(options?: { offset?: number; limit?: number }): Promise<AgentMessage[]>;
  /**
   * Requests cancellation: the model stream and running tools are aborted, the
   * transcript so far is kept, and the run ends with stopReason "aborted".
   */
  cancel(): Promise<void>;
  /** Steers the running run; resolves once the run accepted it (with the queue length). */
  steer(message: UserInput): Promise<{ queued: number }>;
  /** Queues a message for when the run would otherwise stop. */
  followUp(message: UserInput): Promise<{ queued: number }>;
  /** Session runs: sends a prompt and resolves when its turns are done. */
  prompt(message: UserInput): Promise<PromptResult>;
  /** Session runs: ends the session once the current prompt is done. */
  close(): Promise<void>;
  /**
   * Lets a tool call that waits for approval run; `{ remember: true }` also stops asking for its tool for the
   * rest of this run (a `deny` rule of the run's policy still refuses it).
   */
  approve(toolCallId: string, options?: ApproveOptions): Promise<void>;
  /**
   * Replaces the run's approval policy (validated by the run, recorded in its history); the next batch of tool
   * calls follows it, judged by the run's `approvalPolicyFloor` too (a named agent's policy: the stricter verdict
   * wins, so a change only adds restrictions to it). Resolves with the run's own policy now in force.
   */
  setApprovalPolicy(policy: ApprovalPolicy): Promise<ApprovalPolicy>;
  /**
   * Submits the result of a client tool call that waits for it (see `clientTools`). A result the tool's result
   * schema refuses, or for a call that does not wait, is refused (`RunUpdateRejectedError`) and the call keeps
   * waiting. `{ isError: true }`: the client's tool failed, `result` says how.
   */
  submitToolResult(toolCallId: string, result: unknown, options?: SubmitToolResultOptions): Promise<void>;
  /** Refuses a tool call that waits for approval; the model sees the reason. */
  deny(toolCallId: string, reason?: string): Promise<void>;
  /**
   * The run's AgentEvents (what `onEvent` gets), each with a cursor: live with
   * token deltas from the serving worker's event tap (see docs/streaming.md),
   * replayed from the start or after `from`, across continue-as-new; a run no
   * tap holds is rebuilt from its transcript. Ends when the run closes.
   */
  events(options?: RunEventsOptions): AsyncIterable<RunEvent>;
}

/**
 * Checks a message before it is sent: an update over Temporal's payload limit
 * cannot even be refused by the run without the server failing its task, so
 * the caller gets a typed error naming the size and the limit instead.
 */
function checked<T>(update: string, message: T): T {
  const problem = validateUserInput(message);
  if (problem) throw new RunUpdateRejectedError(update, `Invalid message: ${problem}`);
  return message;
}

function handleFor(client: Client, workflow: WorkflowHandle): AgentRunHandle {
  // A finished run is answered from the histories of its runs, so no worker needs to be up to look at it
  // (queries on a closed workflow wait for one); a running one from its queries.
  const running = async () => (await workflow.describe()).status.name === "RUNNING";
  const id = workflow.workflowId;
  /** Update `name` with `args`, checked for size first and delivered once (deliverUpdate). */
  const update = <R, A extends [unknown, ...unknown[]]>(name: string, def: UpdateDefinition<R, A>, args: A) =>
    sendUpdate(workflow, name, args, () => deliverUpdate((o) => workflow.executeUpdate(def, { ...o, args })));
  const transcript: AgentRunHandle["transcript"] = async (options) => {
    const offset = Math.max(0, options?.offset ?? 0);
    if (await running()) return chainTranscript(client, id, undefined, offset, options?.limit);
    const { transcript } = await closedRunView(client, id);
    return transcript.slice(offset, options?.limit === undefined ? undefined : offset + options.limit);
  };
  return {
    workflowId: id,
    workflow,
    result: () => runResult(workflow),
    state: async () => ((await running()) ? workflow.query(stateQuery) : closedRunStateOnly(client, id)),
    transcript,
    events: (options) =>
      runEvents(client, id, { transcript: () => transcript(), closed: async () => !(await running()) }, options),
    cancel: async () => {
      const outcome = await finishedOutcome(workflow);
      if (outcome) throw new RunFinishedError(id, outcome);
      try {
        await workflow.cancel();
      } catch (err) {
        const after =
          err instanceof WorkflowNotFoundError ? await finishedOutcome(workflow).catch(() => undefined) : undefined;
        throw after ? new RunFinishedError(id, after) : err;
      }
    },
    steer: async (message) => update("steer", steerUpdate, [checked("steer", message)]),
    followUp: async (message) => update("followUp", followUpUpdate, [checked("followUp", message)]),
    prompt: async (message) =>
      sendUpdate(workflow, "prompt", [checked("prompt", message)], async () => {
        let answer = await deliverUpdate((o) => workflow.executeUpdate(promptUpdate, { ...o, args: [message] }));
        // The run continued as new before answering: the newest run of the chain has the answer.
        while ("continuedAsNew" in answer) {
          const { promptId } = answer;
          answer = await deliverUpdate((o) => workflow.executeUpdate(promptAnswerUpdate, { ...o, args: [promptId] }));
        }
        return answer;
      }),
    close: () => sendUpdate(workflow, "close", [], () => deliverUpdate((o) => workflow.executeUpdate(closeUpdate, o))),
    // Without options an update carries the id alone, as it always did (workers before `remember` accept it).
    approve: (toolCallId, options) =>
      update("approve", approveUpdate, options?.remember ? [toolCallId, { remember: true }] : [toolCallId]),
    setApprovalPolicy: (policy) => {
      const problem = approvalPolicyProblem(policy, "policy");
      if (problem)
        return Promise.reject(new RunUpdateRejectedError("setApprovalPolicy", `Invalid approval policy: ${problem}`));
      return update("setApprovalPolicy", setApprovalPolicyUpdate, [policy]);
    },
    submitToolResult: (toolCallId, result, options) =>
      update(
        "submitToolResult",
        submitToolResultUpdate,
        options?.isError ? [toolCallId, result, { isError: true }] : [toolCallId, result],
      ),
    deny: (toolCallId, reason) => update("deny", denyUpdate, [toolCallId, reason ?? ""]),
  };
}

/**
 * Transcript messages [offset, offset + limit) of a run, across continue-as-new,
 * by query (a worker must be up): each run of the chain answers for its own
 * messages and names the run before it.
 */
export async function chainTranscript(
  client: Client,
  workflowId: string,
  runId: string | undefined,
  offset: number,
  limit?: number,
): Promise<AgentMessage[]> {
  const handle = client.workflow.getHandle(workflowId, runId);
  const state = await handle.query(stateQuery);
  const out: AgentMessage[] = [];
  const end = limit === undefined ? state.messageCount : Math.min(state.messageCount, offset + limit);
  if (offset < state.earlierMessages && state.previousRunId) {
    out.push(
      ...(await chainTranscript(
        client,
        workflowId,
        state.previousRunId,
        offset,
        Math.min(end, state.earlierMessages) - offset,
      )),
    );
  }
  for (let at = Math.max(offset, state.earlierMessages); at < end; ) {
    const page = await handle.query(transcriptQuery, { offset: at, limit: end - at });
    if (page.length === 0) break;
    out.push(...page);
    at += page.length;
  }
  return out;
}

/** startAgentRun's options besides the run input: suggested for a misspelt field too. */
const START_OPTIONS = [
  "taskQueue",
  "workflowId",
  "workflowTaskTimeout",
  "staticSummary",
  "staticDetails",
  "searchAttributes",
  "memo",
  "eagerStart",
  "tenant",
  "tenants",
] as const satisfies readonly Exclude<keyof StartAgentRunOptions, keyof AgentRunInput>[];

/**
 * Starts a run. Invalid input throws InvalidRunInputError before anything reaches Temporal. With a TypeBox
 * `output` schema, `result().output` is typed as its `Static` (docs/typed-results.md).
 */
export async function startAgentRun<S extends TSchema = TSchema>(
  client: Client,
  options: Omit<StartAgentRunOptions, "output"> & { output?: S },
): Promise<AgentRunHandle<Static<S>>> {
  const {
    taskQueue,
    workflowId,
    workflowTaskTimeout,
    staticSummary,
    staticDetails,
    searchAttributes,
    memo,
    eagerStart,
    tenant,
    tenants,
    ...given
  } = options;
  if (tenant !== undefined) {
    const bad = tenantProblem(tenant);
    if (bad) throw new InvalidRunInputError(`Invalid run input: ${bad}`);
  }
  const limits = tenant === undefined ? undefined : tenantConfig(tenants, tenant);
  // The tenant's default budget, for a run whose caller gave none (validated below like any budget).
  const input: typeof given =
    limits?.budget && given.budget === undefined ? { ...given, budget: limits.budget } : given;
  // A field no run input has (e.g. "maxTurn") is refused, with the field it most likely misspells.
  const problem = validateRunInput(input, { alsoNamed: START_OPTIONS });
  if (problem) throw new InvalidRunInputError(`Invalid run input: ${problem}`);
  // Backstop for the byte budgets of validateRunInput: never let the server refuse the input with a raw error.
  if (jsonBytes(input) > TEMPORAL_PAYLOAD_LIMIT_BYTES) throw tooBigInput(input);
  const id = workflowId ?? `agent-${randomUUID()}`;
  const model = primaryModelName(input.model);
  // The root of the run's trace (GenAI conventions) when the process traces; with the Temporal client interceptor
  // of createAgentTracing() on `client`, the workflow and its activities join it. A no-op otherwise.
  const attributes = {
    "gen_ai.operation.name": "invoke_agent",
    "gen_ai.agent.name": "jai-agent",
    "gen_ai.request.model": model,
    "gen_ai.conversation.id": id,
  };
  return trace
    .getTracer("jai-agent")
    .startActiveSpan("invoke_agent jai-agent", { kind: SpanKind.CLIENT, attributes }, async (span) => {
      try {
        return await start();
      } catch (err) {
        span.setStatus({ code: SpanStatusCode.ERROR, message: errorText(err) });
        throw err;
      } finally {
        span.end();
      }
    });

  async function start(): Promise<AgentRunHandle<Static<S>>> {
    if (tenant === undefined || limits?.maxConcurrentRuns === undefined) return startOnce();
    return tenantLimiter(client).guard(tenant, limits.maxConcurrentRuns, startOnce);
  }

  async function startOnce(): Promise<AgentRunHandle<Static<S>>> {
    const priority: Priority | undefined =
      tenant === undefined
        ? undefined
        : {
            fairnessKey: tenant,
            ...(limits?.fairnessWeight !== undefined ? { fairnessWeight: limits.fairnessWeight } : {}),
          };
    const withTenant = tenant !== undefined && !tenantAttributeMissing(client);
    try {
      return await startWith(withTenant ? tenantAttributes(searchAttributes, tenant) : searchAttributes, priority);
    } catch (err) {
      // A namespace without AgentTenant refuses the attribute: the run starts without it (its fairness key stays).
      if (!withTenant || !isMissingTenantAttribute(err)) throw err;
      missingTenantAttribute.set(client, Date.now());
      return startWith(searchAttributes, priority);
    }
  }

  async function startWith(
    attributes: StartAgentRunOptions["searchAttributes"],
    priority: Priority | undefined,
  ): Promise<AgentRunHandle<Static<S>>> {
    try {
      const workflow = await client.workflow.start(AGENT_RUN_WORKFLOW, {
        taskQueue: taskQueue ?? DEFAULT_TASK_QUEUE,
        workflowId: id,
        args: [input],
        staticSummary: staticSummary ?? (promptSummary(input.prompt) || "(empty prompt)"),
        ...(staticDetails !== undefined ? { staticDetails } : {}),
        ...(attributes !== undefined ? { typedSearchAttributes: attributes } : {}),
        ...(priority !== undefined ? { priority } : {}),
        ...(memo !== undefined ? { memo } : {}),
        ...(workflowTaskTimeout !== undefined ? { workflowTaskTimeout } : {}),
        ...(eagerStart ? { requestEagerStart: true } : {}),
      });
      return handleFor(client, workflow) as AgentRunHandle<Static<S>>;
    } catch (err) {
      if (TOO_BIG.test(errorText(err))) throw tooBigInput(input, errorText(err).trim());
      throw err;
    }
  }
}

/** Clients whose namespace refused AgentTenant, and when: starts leave it out for a while, then try it again. */
const missingTenantAttribute = new WeakMap<Client, number>();
const RECHECK_TENANT_ATTRIBUTE_MS = 5 * 60_000;

function tenantAttributeMissing(client: Client): boolean {
  const at = missingTenantAttribute.get(client);
  return at !== undefined && Date.now() - at < RECHECK_TENANT_ATTRIBUTE_MS;
}

/** The server's refusal of a start naming a search attribute the namespace lacks (here AgentTenant). */
function isMissingTenantAttribute(err: unknown): boolean {
  const text = errorText(err);
  return (
    text.includes(AgentTenant.name) &&
    /no mapping defined|not defined|unknown|invalid|not (?:a )?valid|is not registered/i.test(text)
  );
}

/** The caller's search attributes with AgentTenant added. */
function tenantAttributes(
  given: SearchAttributePair[] | TypedSearchAttributes | undefined,
  tenant: string,
): SearchAttributePair[] | TypedSearchAttributes {
  const pair: SearchAttributePair = { key: AgentTenant, value: tenant };
  if (given instanceof TypedSearchAttributes) return given.updateCopy([pair]);
  if (given !== undefined && !Array.isArray(given))
    throw new InvalidRunInputError(`"searchAttributes" must be a list of { key, value } pairs`);
  return [...(given ?? []).filter((p) => p.key.name !== AgentTenant.name), pair];
}

/** A handle on an existing run, running or finished. */
export function getAgentRun(client: Client, workflowId: string): AgentRunHandle {
  return handleFor(client, client.workflow.getHandle(workflowId));
}
