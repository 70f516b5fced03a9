/** startAgentRun / getAgentRun: typed handles on agent runs for any @temporalio/client Client. */
import { randomUUID } from "node:crypto";
import type { Client, WorkflowHandle } from "@temporalio/client";
import type { AgentMessage, AgentRunInput, AgentRunResult, AgentRunState, PromptResult } from "./types.js";
import {
  AGENT_RUN_WORKFLOW,
  approveUpdate,
  DEFAULT_TASK_QUEUE,
  closeUpdate,
  denyUpdate,
  followUpUpdate,
  promptAnswerUpdate,
  promptUpdate,
  stateQuery,
  steerUpdate,
  transcriptQuery,
  type UserInput,
} from "./workflows/definitions.js";
import { validateRunInput, validateUserInput } from "./workflows/input.js";
import { closedRunView } from "./history-view.js";

/** Thrown by startAgentRun for input the workflow would reject; nothing is started. */
export class InvalidRunInputError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "InvalidRunInputError";
  }
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
}

export interface AgentRunHandle {
  /** Workflow id of the run. */
  readonly workflowId: string;
  /** The Temporal handle underneath (signals, describe, terminate, ...). */
  readonly workflow: WorkflowHandle;
  /** Waits for the run to end. */
  result(): Promise<AgentRunResult>;
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
  /** Lets a tool call that waits for approval run. */
  approve(toolCallId: string): Promise<void>;
  /** Refuses a tool call that waits for approval; the model sees the reason. */
  deny(toolCallId: string, reason?: string): Promise<void>;
}

/**
 * Checks a message before it is sent: an update over Temporal's payload limit
 * cannot even be refused by the run without the server failing its task, so
 * the caller gets a typed error naming the size and the limit instead.
 */
function checked<T>(message: T): T {
  const problem = validateUserInput(message);
  if (problem) throw new InvalidRunInputError(`Invalid message: ${problem}`);
  return message;
}

function handleFor(client: Client, workflow: WorkflowHandle): AgentRunHandle {
  // A finished run is answered from its history, so no worker needs to be up to look at it; when its
  // result left messages out (too big), only the transcript query has them all.
  const closed = async () => {
    if ((await workflow.describe()).status.name === "RUNNING") return undefined;
    const view = await closedRunView(client, workflow);
    return view.complete ? view : undefined;
  };
  return {
    workflowId: workflow.workflowId,
    workflow,
    result: () => workflow.result() as Promise<AgentRunResult>,
    state: async () => (await closed())?.state ?? (await workflow.query(stateQuery)),
    transcript: async (options) => {
      const view = await closed();
      if (!view) return chainTranscript(client, workflow.workflowId, undefined, Math.max(0, options?.offset ?? 0), options?.limit);
      const offset = Math.max(0, options?.offset ?? 0);
      return view.transcript.slice(offset, options?.limit === undefined ? undefined : offset + options.limit);
    },
    cancel: async () => {
      await workflow.cancel();
    },
    steer: async (message) => workflow.executeUpdate(steerUpdate, { args: [checked(message)] }),
    followUp: async (message) => workflow.executeUpdate(followUpUpdate, { args: [checked(message)] }),
    prompt: async (message) => {
      let answer = await workflow.executeUpdate(promptUpdate, { args: [checked(message)] });
      // The run continued as new before answering: the newest run of the chain has the answer.
      while ("continuedAsNew" in answer) answer = await workflow.executeUpdate(promptAnswerUpdate, { args: [answer.promptId] });
      return answer;
    },
    close: () => workflow.executeUpdate(closeUpdate),
    approve: (toolCallId) => workflow.executeUpdate(approveUpdate, { args: [toolCallId] }),
    deny: (toolCallId, reason) => workflow.executeUpdate(denyUpdate, { args: [toolCallId, reason ?? ""] }),
  };
}

/**
 * Transcript messages [offset, offset + limit) of a run, across continue-as-new:
 * each run of the chain answers for its own messages and names the run before it.
 */
async function chainTranscript(client: Client, workflowId: string, runId: string | undefined, offset: number, limit?: number): Promise<AgentMessage[]> {
  const handle = client.workflow.getHandle(workflowId, runId);
  const state = await handle.query(stateQuery);
  const out: AgentMessage[] = [];
  const end = limit === undefined ? state.messageCount : Math.min(state.messageCount, offset + limit);
  if (offset < state.earlierMessages && state.previousRunId) {
    out.push(...(await chainTranscript(client, workflowId, state.previousRunId, offset, Math.min(end, state.earlierMessages) - offset)));
  }
  for (let at = Math.max(offset, state.earlierMessages); at < end; ) {
    const page = await handle.query(transcriptQuery, { offset: at, limit: end - at });
    if (page.length === 0) break;
    out.push(...page);
    at += page.length;
  }
  return out;
}

function promptSummary(prompt: AgentRunInput["prompt"]): string {
  const last = Array.isArray(prompt) ? prompt[prompt.length - 1] : prompt;
  const content = typeof last === "string" ? last : last.content;
  const text = typeof content === "string" ? content : content.map((c) => (c.type === "text" ? c.text : `[${c.type}]`)).join(" ");
  const line = text.replace(/\s+/g, " ").trim();
  return line.length > 100 ? `${line.slice(0, 99)}…` : line;
}

/** Starts a run. Invalid input throws InvalidRunInputError before anything reaches Temporal. */
export async function startAgentRun(client: Client, options: StartAgentRunOptions): Promise<AgentRunHandle> {
  const { taskQueue, workflowId, workflowTaskTimeout, ...input } = options;
  const problem = validateRunInput(input);
  if (problem) throw new InvalidRunInputError(`Invalid run input: ${problem}`);
  const model = typeof input.model === "string" ? input.model : `${input.model.provider}/${input.model.id}`;
  const workflow = await client.workflow.start(AGENT_RUN_WORKFLOW, {
    taskQueue: taskQueue ?? DEFAULT_TASK_QUEUE,
    workflowId: workflowId ?? `agent-${randomUUID()}`,
    args: [input],
    staticSummary: `${model} · ${promptSummary(input.prompt)}`,
    ...(workflowTaskTimeout !== undefined ? { workflowTaskTimeout } : {}),
  });
  return handleFor(client, workflow);
}

/** A handle on an existing run, running or finished. */
export function getAgentRun(client: Client, workflowId: string): AgentRunHandle {
  return handleFor(client, client.workflow.getHandle(workflowId));
}
