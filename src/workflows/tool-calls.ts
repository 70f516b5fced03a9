/**
 * One batch of tool calls: scheduling, approvals, steering skips, and one
 * activity per call. Every call ends with a result in the transcript, in the
 * order the model asked for them.
 */
import {
  ActivityFailure,
  CancellationScope,
  condition,
  isCancellation,
  TimeoutFailure,
  type ActivityOptions,
  type LocalActivityOptions,
} from "@temporalio/workflow";
import type { ToolCall, ToolResultMessage } from "@jai/ai";
import { toolResultMessage } from "../common/tool-result.js";
import { activityOverrides, executeFastTool, executeTool, prepareToolCall, TOOL_DEFAULTS } from "./activities.js";
import type {
  AgentEvent,
  AgentRunWorkflowInput,
  ExecuteToolInput,
  ExecuteToolOutput,
  PendingToolCall,
  RunSetup,
  ToolResultLimits,
  ToolSpec,
} from "../types.js";
import type { ApprovalWait, RunState } from "./run-state.js";
import { toolSummary } from "./summary.js";
import { errorOutput } from "./tool-output.js";
import { runToolBatch } from "./tool-batch.js";
import { metrics } from "./metrics-sink.js";
import { runSubAgent } from "./sub-agent.js";
import { leaveModelWorker, noteTaskLag } from "./model-call.js";
import { LOCAL_ACTIVITIES_PATCH, hasChange } from "./patches.js";

export const SKIPPED_BY_STEERING = "Skipped: the user sent a steering message before this tool call started.";
export const ABORTED_BY_CANCEL = "Aborted: the run was cancelled before this tool call finished.";

export function resultOf(call: ToolCall, output: ExecuteToolOutput): ToolResultMessage {
  return toolResultMessage(call.id, call.name, output, Date.now());
}

/**
 * Runs the batch; returns each call's output and result message in source order.
 *
 * Events follow pi-agent-core: `tool_execution_end` the moment a call finishes
 * (the order Temporal records the completions), and once its group (see
 * tool-batch.ts) has finished, the result messages in source order, each
 * entering the transcript as its message_end is emitted.
 */
export function runTools(
  input: AgentRunWorkflowInput,
  setup: RunSetup,
  run: RunState,
  calls: ToolCall[],
  emit: (event: AgentEvent) => void,
): Promise<{ output: ExecuteToolOutput; message: ToolResultMessage }[]> {
  const specs = new Map(setup.tools.map((t) => [t.name, t]));
  const entries: PendingToolCall[] = calls.map((c) => ({
    toolCallId: c.id,
    toolName: c.name,
    args: c.arguments,
    started: false,
  }));
  run.pending = [...entries];
  run.batch = { toolCallIds: calls.map((c) => c.id), outputs: calls.map(() => undefined) };
  const batch = run.batch;
  const modes = calls.map((c) => specs.get(c.name)?.executionMode ?? input.toolExecution ?? "parallel");
  const messages: ToolResultMessage[] = [];
  // After a cancellation the batch is closed by closeCancelledBatch; a late completion must not add to it.
  const current = () => run.batch === batch;

  // No async functions on the way to each call's activity: a replay pays for every promise (see runToolBatch).
  return runToolBatch(modes, {
    run: (index) => {
      const call = calls[index];
      entries[index].started = true;
      emit({ type: "tool_execution_start", toolCallId: call.id, toolName: call.name, args: call.arguments });
      return run.steering.length > 0
        ? Promise.resolve(errorOutput(SKIPPED_BY_STEERING))
        : processCall(input, specs.get(call.name), call, run, index);
    },
    finished: (index, output) => {
      if (!current()) return;
      batch.outputs[index] = output;
      const call = calls[index];
      run.pending = run.pending.filter((p) => p !== entries[index]);
      emit({
        type: "tool_execution_end",
        toolCallId: call.id,
        toolName: call.name,
        result: output.result,
        isError: output.isError,
      });
    },
    groupFinished: (indices, results) => {
      if (!current()) return;
      indices.forEach((index, i) => {
        messages[index] = resultOf(calls[index], results[i]);
        enterResult(run, messages[index], emit);
      });
    },
  }).then((outputs) => {
    run.batch = undefined;
    return outputs.map((output, i) => ({ output, message: messages[i] }));
  });
}

function enterResult(run: RunState, message: ToolResultMessage, emit: (event: AgentEvent) => void): void {
  run.add(message);
  emit({ type: "message_start", message });
  emit({ type: "message_end", message });
}

/**
 * Cancellation: every call of the last assistant message gets a result, with
 * the same structure as a finished batch. Calls that were running end now
 * (aborted), calls that never started get no execution events; then the
 * missing result messages follow in source order.
 */
export function closeCancelledBatch(run: RunState, calls: ToolCall[], emit: (event: AgentEvent) => void): void {
  const batch = run.batch;
  const open = calls.filter((call) => !run.hasResult(call.id));
  const outputs = open.map((call) => batch?.outputs[batch.toolCallIds.indexOf(call.id)]);
  open.forEach((call, i) => {
    if (outputs[i]) return; // finished before the cancellation: its end was emitted then
    outputs[i] = errorOutput(ABORTED_BY_CANCEL);
    if (run.pending.some((p) => p.toolCallId === call.id && p.started)) {
      emit({
        type: "tool_execution_end",
        toolCallId: call.id,
        toolName: call.name,
        result: outputs[i]!.result,
        isError: true,
      });
    }
  });
  open.forEach((call, i) => enterResult(run, resultOf(call, outputs[i]!), emit));
  run.pending = [];
  run.batch = undefined;
}

/** Approval (when the tool asks for it), then execution. */
function processCall(
  input: AgentRunWorkflowInput,
  spec: ToolSpec | undefined,
  call: ToolCall,
  run: RunState,
  index: number,
): Promise<ExecuteToolOutput> {
  if (!spec) return Promise.resolve(errorOutput(`Tool ${call.name} not found`));
  if (spec.approval) return approveThenExecute(input, spec, call, run, index);
  return execute(input, spec, call, run, index);
}

async function approveThenExecute(
  input: AgentRunWorkflowInput,
  spec: ToolSpec,
  call: ToolCall,
  run: RunState,
  index: number,
): Promise<ExecuteToolOutput> {
  let needsApproval = spec.approval === "always";
  if (spec.approval === "predicate") {
    const check = await checkApproval(spec, call);
    if (check.error) return errorOutput(check.error);
    needsApproval = check.needsApproval;
  }
  if (needsApproval) {
    const refusal = await waitForApproval(run, call, spec.approvalTimeout ?? input.approvalTimeout);
    if (refusal) return errorOutput(refusal);
    if (run.steering.length > 0) return errorOutput(SKIPPED_BY_STEERING);
  }
  return execute(input, spec, call, run, index);
}

const execute = (input: AgentRunWorkflowInput, spec: ToolSpec, call: ToolCall, run: RunState, index: number) =>
  spec.subAgent
    ? runSubAgent(spec, spec.subAgent, call, run, index, input.subAgentDepth)
    : executeCall(spec, call, run, index, input.toolResultLimits);

/** Asks the tool's approval predicate in the worker; its failure is the call's error result, never the run's. */
async function checkApproval(spec: ToolSpec, call: ToolCall): Promise<{ error?: string; needsApproval: boolean }> {
  const timeout = spec.activity?.startToCloseTimeout;
  try {
    return await prepareToolCall.executeWithOptions(
      {
        summary: `approval check · ${toolSummary(spec.name, call.arguments)}`,
        ...(timeout !== undefined ? { startToCloseTimeout: timeout } : {}),
      } as ActivityOptions,
      [{ toolCallId: call.id, toolName: call.name, args: call.arguments }],
    );
  } catch (err) {
    if (!(err instanceof ActivityFailure) || isCancellation(err) || CancellationScope.current().consideredCancelled)
      throw err;
    return {
      error: `Tool ${call.name}: its approval check failed (${err.cause?.message ?? err.message}), so the call did not run.`,
      needsApproval: false,
    };
  }
}

/** Waits as a workflow condition; returns why the call may not run, or undefined when approved. */
async function waitForApproval(
  run: RunState,
  call: ToolCall,
  timeout: string | number | undefined,
): Promise<string | undefined> {
  const wait: ApprovalWait = {
    pending: {
      toolCallId: call.id,
      toolName: call.name,
      args: call.arguments,
      since: new Date(Date.now()).toISOString(),
    },
  };
  run.approvals.set(call.id, wait);
  run.publishDetails();
  metrics.approvalsWaiting(1);
  try {
    const decided = () => wait.decision !== undefined || run.steering.length > 0;
    const inTime = timeout === undefined ? (await condition(decided), true) : await condition(decided, timeout);
    if (!inTime) return `Tool call denied: no approval within ${timeout}.`;
    if (!wait.decision) return SKIPPED_BY_STEERING;
    return wait.decision.approved
      ? undefined
      : `Tool call denied by the user${wait.decision.reason ? `: ${wait.decision.reason}` : "."}`;
  } finally {
    metrics.approvalsWaiting(-1);
    run.approvals.delete(call.id);
    run.publishDetails();
  }
}

/** A fast tool's call as a local activity (see AgentTool.fast); the model calls refer to its result by `outputKey`. */
async function executeFast(
  spec: ToolSpec,
  input: ExecuteToolInput & { outputKey: string },
  fromActivity: Map<unknown, string>,
): Promise<ExecuteToolOutput> {
  const options: LocalActivityOptions = {
    summary: toolSummary(spec.name, input.args),
    ...(spec.activity?.startToCloseTimeout !== undefined
      ? { startToCloseTimeout: spec.activity.startToCloseTimeout }
      : {}),
    ...(spec.activity?.retry !== undefined ? { retry: { ...TOOL_DEFAULTS.retry, ...spec.activity.retry } } : {}),
  } as LocalActivityOptions;
  const { result, isError } = await executeFastTool.executeWithOptions(options, [input]);
  fromActivity.set(result.content, input.outputKey);
  return { result, isError };
}

/** One tool call as one activity (a local one for fast tools). */
function executeCall(
  spec: ToolSpec,
  call: ToolCall,
  run: RunState,
  index: number,
  limits: ToolResultLimits | undefined,
): Promise<ExecuteToolOutput> {
  const options = activityOverrides(spec.activity, toolSummary(spec.name, call.arguments));
  // Tool-call ids are the model's; the turn and position keep them unique within the run.
  options.activityId = `tool-${run.turn}-${index}-${call.id}`.slice(0, 200);
  const args = { toolCallId: call.id, toolName: call.name, args: call.arguments, ...(limits ? { limits } : {}) };
  if (spec.local && hasChange(LOCAL_ACTIVITIES_PATCH))
    return executeFast(spec, { ...args, outputKey: options.activityId }, run.fromActivity).catch((err: unknown) =>
      toolFailed(spec, call, run, err),
    );
  return executeTool.executeWithOptions(options, [{ ...args, doneAt: true }]).then(
    (output) => {
      run.fromActivity.set(output.result.content, options.activityId!);
      // Run again after its worker stopped: that worker may be the one the next model call would be sent to, and a
      // call queued for a dead worker waits out its schedule-to-start timeout on top of this call's heartbeat timeout.
      if ((output.attempt ?? 1) > 1) leaveModelWorker(run);
      noteTaskLag(run, output.doneAtMs);
      return output;
    },
    (err: unknown) => toolFailed(spec, call, run, err),
  );
}

/** A call that failed for good: its error result, which the model sees (a cancel stays a cancel). */
function toolFailed(spec: ToolSpec, call: ToolCall, run: RunState, err: unknown): ExecuteToolOutput {
  // A cancel whose tool worker is dead ends in a timeout: still a cancel.
  if (!(err instanceof ActivityFailure) || isCancellation(err) || CancellationScope.current().consideredCancelled)
    throw err;
  if (err.cause instanceof TimeoutFailure) {
    leaveModelWorker(run);
    const attempts = spec.activity?.retry?.maximumAttempts;
    const why =
      attempts === 1
        ? "it is not idempotent, so it was not run again"
        : `no attempt finished (${attempts ?? TOOL_DEFAULTS.retry?.maximumAttempts} allowed)`;
    return errorOutput(
      `Tool ${call.name} was interrupted (its worker stopped or it timed out: ${err.cause.message}); ${why}. It may have had partial effects.`,
    );
  }
  return errorOutput(`Tool ${call.name} failed: ${err.cause?.message ?? err.message}`);
}
