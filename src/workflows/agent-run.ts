/**
 * The agent loop as a Temporal workflow. Deterministic: every effect is an
 * activity, every event leaves through the `agent` sink, the transcript lives
 * in workflow state and so in history.
 */
import {
  ActivityFailure,
  ApplicationFailure,
  isCancellation,
  proxyActivities,
  proxySinks,
  setCurrentDetails,
  setHandler,
  type ActivityOptions,
} from "@temporalio/workflow";
import type { AssistantMessage, ToolCall, ToolResultMessage, UserMessage } from "@jai/ai";
import type { createActivities } from "../activities/index.js";
import type {
  AgentEvent,
  AgentMessage,
  AgentRunInput,
  AgentRunResult,
  AgentRunState,
  AgentStopReason,
  ExecuteToolOutput,
  PendingToolCall,
  RunSetup,
  ToolActivityOptions,
  ToolSpec,
} from "../types.js";
import { stateQuery, transcriptQuery, type AgentSinks } from "./definitions.js";
import { validateRunInput } from "./input.js";
import { modelSummary, runDetails, toolSummary } from "./summary.js";
import { runToolBatch } from "./tool-batch.js";
import { addUsage, emptyUsage } from "./usage.js";

type Activities = ReturnType<typeof createActivities>;

const DEFAULT_MAX_TURNS = 50;

const MODEL_DEFAULTS: ActivityOptions = {
  startToCloseTimeout: "10m",
  heartbeatTimeout: "30s",
  retry: { initialInterval: "2s", backoffCoefficient: 2, maximumInterval: "60s", maximumAttempts: 8 },
};

const TOOL_DEFAULTS: ActivityOptions = {
  startToCloseTimeout: "10m",
  heartbeatTimeout: "30s",
  retry: { initialInterval: "1s", backoffCoefficient: 2, maximumInterval: "30s", maximumAttempts: 3 },
};

const { resolveRunSetup } = proxyActivities<Activities>({ startToCloseTimeout: "1m", retry: { maximumAttempts: 5 } });
const { streamAssistantMessage } = proxyActivities<Activities>(MODEL_DEFAULTS);
const { executeTool } = proxyActivities<Activities>(TOOL_DEFAULTS);

const { agent } = proxySinks<AgentSinks>();

/** Everything the loop knows; the queries read it. */
class RunState {
  transcript: AgentMessage[] = [];
  newMessages: AgentMessage[] = [];
  usage = emptyUsage();
  turn = 0;
  phase: AgentRunState["phase"] = "starting";
  pending: PendingToolCall[] = [];
  stopReason?: AgentStopReason;
  errorMessage?: string;

  add(message: AgentMessage): void {
    this.transcript.push(message);
    this.newMessages.push(message);
    if (message.role === "assistant") this.usage = addUsage(this.usage, message.usage);
  }

  snapshot(): AgentRunState {
    const done = this.stopReason !== undefined;
    return {
      status: !done ? "running" : this.stopReason === "error" ? "failed" : this.stopReason === "aborted" ? "cancelled" : "completed",
      phase: this.phase,
      turn: this.turn,
      usage: this.usage,
      pendingToolCalls: this.pending.map((p) => ({ ...p })),
      messageCount: this.transcript.length,
      stopReason: this.stopReason,
      errorMessage: this.errorMessage,
    };
  }

  publishDetails(extra?: string): void {
    const s = this.snapshot();
    setCurrentDetails(runDetails(s.status, s.phase.replace("_", " "), s.turn, s.usage, extra));
  }
}

/** Workflow `agentRun`: one agent run, from prompt to final answer. */
export async function agentRun(input: AgentRunInput): Promise<AgentRunResult> {
  const problem = validateRunInput(input);
  if (problem) throw ApplicationFailure.nonRetryable(`Invalid run input: ${problem}`, "InvalidRunInput");

  const run = new RunState();
  setHandler(stateQuery, () => run.snapshot());
  setHandler(transcriptQuery, (options) => {
    const offset = Math.max(0, options?.offset ?? 0);
    return run.transcript.slice(offset, options?.limit === undefined ? undefined : offset + options.limit);
  });
  run.publishDetails();

  const setup = await resolveSetup(input);
  const emit = (event: AgentEvent) => agent.emit(event);
  const maxTurns = input.maxTurns ?? DEFAULT_MAX_TURNS;

  let prompts: AgentMessage[] = [];
  if (Array.isArray(input.prompt)) run.transcript.push(...input.prompt);
  else prompts = [typeof input.prompt === "string" ? userMessage(input.prompt) : input.prompt];

  emit({ type: "agent_start" });
  emit({ type: "turn_start" });
  for (const prompt of prompts) {
    run.add(prompt);
    emit({ type: "message_start", message: prompt });
    emit({ type: "message_end", message: prompt });
  }

  for (;;) {
    if (run.turn > 0) emit({ type: "turn_start" });
    run.turn++;
    run.phase = "streaming";
    run.publishDetails();

    const message = await callModel(input, setup, run);
    run.add(message);
    emit({ type: "message_end", message });

    if (message.stopReason === "error" || message.stopReason === "aborted") {
      emit({ type: "turn_end", message, toolResults: [] });
      run.stopReason = message.stopReason;
      run.errorMessage = message.errorMessage;
      break;
    }

    const toolCalls = message.content.filter((c): c is ToolCall => c.type === "toolCall");
    let toolResults: ToolResultMessage[] = [];
    let terminate = false;
    if (toolCalls.length > 0) {
      run.phase = "running_tools";
      run.publishDetails(`${toolCalls.length} tool call${toolCalls.length > 1 ? "s" : ""}`);
      const outputs = await runTools(input, setup, run, toolCalls, emit);
      toolResults = outputs.map((o) => o.message);
      terminate = outputs.every((o) => o.result.terminate === true);
    }
    emit({ type: "turn_end", message, toolResults });

    if (toolCalls.length === 0) {
      run.stopReason = message.stopReason === "length" ? "length" : "stop";
      break;
    }
    if (terminate) {
      run.stopReason = "terminate";
      break;
    }
    if (run.turn >= maxTurns) {
      run.stopReason = "max_turns";
      break;
    }
  }

  run.phase = "done";
  run.publishDetails();
  emit({ type: "agent_end", messages: run.newMessages });
  return {
    messages: run.newMessages,
    stopReason: run.stopReason,
    turns: run.turn,
    usage: run.usage,
    ...(run.errorMessage !== undefined ? { errorMessage: run.errorMessage } : {}),
  };
}

function userMessage(text: string): UserMessage {
  return { role: "user", content: text, timestamp: Date.now() };
}

/** The setup activity resolves the model and tools in the worker; its answer is recorded in history. */
async function resolveSetup(input: AgentRunInput): Promise<RunSetup> {
  const label = typeof input.model === "string" ? input.model : `${input.model.provider}/${input.model.id}`;
  try {
    return await resolveRunSetup.executeWithOptions({ summary: `setup · ${label}` }, [{ model: input.model, tools: input.tools }]);
  } catch (err) {
    const cause = err instanceof ActivityFailure ? err.cause : err;
    if (cause instanceof ApplicationFailure && cause.nonRetryable) {
      throw ApplicationFailure.nonRetryable(cause.message, cause.type ?? "InvalidRunInput");
    }
    throw err;
  }
}

/** Per-run or per-tool settings over the defaults of the activity proxy (deep-merged by the SDK). */
function activityOverrides(override: ToolActivityOptions | undefined, summary: string): ActivityOptions {
  return {
    ...(override?.startToCloseTimeout !== undefined ? { startToCloseTimeout: override.startToCloseTimeout } : {}),
    ...(override?.heartbeatTimeout !== undefined ? { heartbeatTimeout: override.heartbeatTimeout } : {}),
    ...(override?.retry !== undefined ? { retry: override.retry } : {}),
    summary,
  } as ActivityOptions;
}

/** One model call. A call that fails for good becomes an assistant message with stopReason "error". */
async function callModel(input: AgentRunInput, setup: RunSetup, run: RunState): Promise<AssistantMessage> {
  const { model } = setup;
  const options = activityOverrides(input.modelActivity, modelSummary(run.turn, model.provider, model.id));
  try {
    return await streamAssistantMessage.executeWithOptions(options, [
      {
        model,
        systemPrompt: input.systemPrompt,
        messages: run.transcript.map(withoutDetails),
        tools: setup.tools.map(({ name, description, parameters }) => ({ name, description, parameters })),
        turn: run.turn,
      },
    ]);
  } catch (err) {
    if (!(err instanceof ActivityFailure) || isCancellation(err)) throw err;
    const message: AssistantMessage = {
      role: "assistant",
      content: [],
      api: model.api,
      provider: model.provider,
      model: model.id,
      usage: emptyUsage(),
      stopReason: "error",
      errorMessage: `Model call failed: ${err.cause?.message ?? err.message}`,
      timestamp: Date.now(),
    };
    agent.emit({ type: "message_start", message });
    return message;
  }
}

/** `details` is for logs and UI only: the model never sees it. */
function withoutDetails(message: AgentMessage): AgentMessage {
  if (message.role !== "toolResult" || message.details === undefined) return message;
  const { details: _details, ...rest } = message;
  return rest;
}

interface ToolOutcome extends ExecuteToolOutput {
  message: ToolResultMessage;
}

async function runTools(
  input: AgentRunInput,
  setup: RunSetup,
  run: RunState,
  calls: ToolCall[],
  emit: (event: AgentEvent) => void,
): Promise<ToolOutcome[]> {
  const specs = new Map(setup.tools.map((t) => [t.name, t]));
  const entries: PendingToolCall[] = calls.map((c) => ({ toolCallId: c.id, toolName: c.name, args: c.arguments, started: false }));
  run.pending = [...entries];
  const modes = calls.map((c) => specs.get(c.name)?.executionMode ?? input.toolExecution ?? "parallel");
  const messages: ToolResultMessage[] = [];

  const outcomes = await runToolBatch(modes, {
    run: async (index) => {
      const call = calls[index];
      entries[index].started = true;
      emit({ type: "tool_execution_start", toolCallId: call.id, toolName: call.name, args: call.arguments });
      return executeCall(specs.get(call.name), call, run.turn, index);
    },
    settledInOrder: (index, output) => {
      const call = calls[index];
      const message: ToolResultMessage = {
        role: "toolResult",
        toolCallId: call.id,
        toolName: call.name,
        content: output.result.content,
        ...(output.result.details !== undefined ? { details: output.result.details } : {}),
        isError: output.isError,
        timestamp: Date.now(),
      };
      emit({ type: "tool_execution_end", toolCallId: call.id, toolName: call.name, result: output.result, isError: output.isError });
      messages[index] = message;
      run.add(message);
      run.pending = run.pending.filter((p) => p !== entries[index]);
      emit({ type: "message_start", message });
      emit({ type: "message_end", message });
    },
  });
  return outcomes.map((o, i) => ({ ...o, message: messages[i] }));
}

function errorOutput(text: string): ExecuteToolOutput {
  return { result: { content: [{ type: "text", text }] }, isError: true };
}

/** One tool call as one activity; an unknown tool never reaches the worker. */
async function executeCall(spec: ToolSpec | undefined, call: ToolCall, turn: number, index: number): Promise<ExecuteToolOutput> {
  if (!spec) return errorOutput(`Tool ${call.name} not found`);
  const options = activityOverrides(spec.activity, toolSummary(spec.label ?? spec.name, call.arguments));
  // Tool-call ids are the model's; the turn and position keep them unique within the run.
  options.activityId = `tool-${turn}-${index}-${call.id}`.slice(0, 200);
  try {
    return await executeTool.executeWithOptions(options, [{ toolCallId: call.id, toolName: call.name, args: call.arguments }]);
  } catch (err) {
    if (!(err instanceof ActivityFailure) || isCancellation(err)) throw err;
    return errorOutput(`Tool ${call.name} failed: ${err.cause?.message ?? err.message}`);
  }
}
