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
import { toolResultMessage } from "../shared/tool-result.js";
import { activityOverrides, executeFastTool, executeTool, prepareToolCall, TOOL_DEFAULTS } from "./activity-proxies.js";
import type { AgentEvent, ToolExecutionMode } from "../shared/contracts.js";
import { emit as emitEvent } from "./event-sink.js";
import { policyDenial } from "../shared/approval-rules.js";
import type { ExecuteToolInput, ExecuteToolOutput, ToolSpec } from "../shared/wire.js";
import type { Conversation } from "./conversation.js";
import type { RunContext } from "./run-context.js";
import type { RunState } from "./run-state.js";
import { toolSummary } from "../shared/summary.js";
import { enter, toolEnd } from "./prompt-loop.js";
import { errorOutput } from "../shared/tool-output.js";
import { runToolBatch } from "./tool-batch.js";
import { metrics } from "./metrics-sink.js";
import { runSubAgent } from "./sub-agent.js";
import { APPROVAL_POLICY_PATCH, CLIENT_WAIT_STATUS_PATCH, LOCAL_ACTIVITIES_PATCH, hasChange } from "./patches.js";

/** How a tool's calls run when neither the tool nor the run says. */
export const DEFAULT_TOOL_EXECUTION: ToolExecutionMode = "parallel";
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
  run: RunContext,
  calls: ToolCall[],
  emit: (event: AgentEvent) => void,
): Promise<{ output: ExecuteToolOutput; message: ToolResultMessage }[]> {
  const { input, setup, state } = run;
  const specs = new Map(setup.tools.map((t) => [t.name, t]));
  const tools = state.tools;
  const batch = tools.begin(calls);
  const modes = calls.map((c) => specs.get(c.name)?.executionMode ?? input.toolExecution ?? DEFAULT_TOOL_EXECUTION);
  const messages: ToolResultMessage[] = [];

  // No async functions on the way to each call's activity: a replay pays for every promise (see runToolBatch).
  // After a cancellation the batch is closed by closeCancelledBatch; a late completion must not add to it.
  return runToolBatch(modes, {
    run: (index) => {
      const call = calls[index];
      tools.announce(batch, index);
      emit({ type: "tool_execution_start", toolCallId: call.id, toolName: call.name, args: call.arguments });
      return state.inbox.steering.length > 0
        ? Promise.resolve(errorOutput(SKIPPED_BY_STEERING))
        : processCall(run, specs.get(call.name), call, index);
    },
    finished: (index, output) => {
      if (!tools.isCurrent(batch)) return;
      tools.finish(batch, index, output);
      // A call ending beside waiting client calls may leave only them: the status says so (client-tool runs only).
      if (tools.clientWaitStatus && tools.clientWaits.size > 0) state.publishDetails();
      const call = calls[index];
      emit(toolEnd(call, output));
    },
    groupFinished: (indices, results) => {
      if (!tools.isCurrent(batch)) return;
      indices.forEach((index, i) => {
        messages[index] = resultOf(calls[index], results[i]);
        enter(state, [messages[index]], emit);
      });
    },
  }).then((outputs) => {
    tools.end(batch);
    return outputs.map((output, i) => ({ output, message: messages[i] }));
  });
}

/**
 * Cancellation: every call of the last assistant message gets a result, with
 * the same structure as a finished batch. Calls that were announced end now
 * (aborted), calls that never were get no execution events; then the
 * missing result messages follow in source order.
 */
export function closeCancelledBatch(state: RunState, calls: ToolCall[], emit: (event: AgentEvent) => void): void {
  const tools = state.tools;
  const open = calls.filter((call) => !state.conversation.hasResult(call.id));
  const outputs = open.map((call) => tools.outputOf(call.id));
  open.forEach((call, i) => {
    if (outputs[i]) return; // finished before the cancellation: its end was emitted then
    outputs[i] = errorOutput(ABORTED_BY_CANCEL);
    if (tools.runningUnfinished(call.id)) emit(toolEnd(call, outputs[i]!));
  });
  open.forEach((call, i) => enter(state, [resultOf(call, outputs[i]!)], emit));
  tools.clear();
}

/** Approval (when the policy or the tool asks for it), then execution. */
function processCall(
  run: RunContext,
  spec: ToolSpec | undefined,
  call: ToolCall,
  index: number,
): Promise<ExecuteToolOutput> {
  if (!spec) return Promise.resolve(errorOutput(`Tool ${call.name} not found`));
  const tools = run.state.tools;
  // Only a run with a policy, a floor or a remembered tool asks the patch (see APPROVAL_POLICY_PATCH); a run with a
  // floor started after baseline v4 (POLICY_FLOOR_PATCH), so this records no marker for it.
  if (
    (tools.batchPolicy !== undefined || tools.floor.length > 0 || tools.remembered.length > 0) &&
    hasChange(APPROVAL_POLICY_PATCH)
  )
    return byPolicy(run, spec, call, index);
  if (spec.approval) return approveThenExecute(run, spec, call, index);
  return execute(run, spec, call, index);
}

/**
 * The batch's policy and the run's floor decide (the stricter verdict): a deny rule refuses the call (the model
 * sees why), allow or a tool approved with `remember` runs it, ask waits for a person, "tool" leaves it to the
 * tool's `requiresApproval`.
 */
function byPolicy(run: RunContext, spec: ToolSpec, call: ToolCall, index: number): Promise<ExecuteToolOutput> {
  const verdict = run.state.tools.verdict(call.name);
  if (verdict.action === "deny") return Promise.resolve(errorOutput(policyDenial(call.name, verdict)));
  if (verdict.action === "allow" || run.state.tools.remembered.includes(call.name))
    return execute(run, spec, call, index);
  if (verdict.action === "ask") return approveThenExecute(run, spec, call, index, true);
  return spec.approval ? approveThenExecute(run, spec, call, index) : execute(run, spec, call, index);
}

async function approveThenExecute(
  run: RunContext,
  spec: ToolSpec,
  call: ToolCall,
  index: number,
  ask = false,
): Promise<ExecuteToolOutput> {
  let needsApproval = ask || spec.approval === "always";
  if (!ask && spec.approval === "predicate") {
    const check = await checkApproval(spec, call);
    if (check.error) return errorOutput(check.error);
    needsApproval = check.needsApproval;
  }
  if (needsApproval) {
    const refusal = await waitForApproval(run.state, index, call, spec.approvalTimeout ?? run.input.approvalTimeout);
    if (refusal) return errorOutput(refusal);
    if (run.state.inbox.steering.length > 0) return errorOutput(SKIPPED_BY_STEERING);
  }
  return execute(run, spec, call, index);
}

/** The call's execution starts (the state query says so from here on, not while it waits for approval). */
function execute(run: RunContext, spec: ToolSpec, call: ToolCall, index: number): Promise<ExecuteToolOutput> {
  run.state.tools.executing(index);
  // A call starting beside a waiting client call: the run works again (client-tool runs only).
  if (run.state.tools.clientWaitStatus && run.state.tools.clientWaits.size > 0) run.state.publishDetails();
  if (spec.client) return awaitClientResult(run, spec, call, index);
  return spec.subAgent ? runSubAgent(run, spec, spec.subAgent, call, index) : executeCall(run, spec, call, index);
}

/**
 * A client tool's call: waits as a workflow condition (no worker held) until a client submits its result (the
 * `submitToolResult` update, checked by its validator), steering skips it, or its timeout makes it an error.
 */
async function awaitClientResult(
  run: RunContext,
  spec: ToolSpec,
  call: ToolCall,
  index: number,
): Promise<ExecuteToolOutput> {
  const { state } = run;
  const timeout = spec.client?.timeout;
  // Shows "waiting_for_client" while only client calls wait; patched: see CLIENT_WAIT_STATUS_PATCH.
  if (!state.tools.clientWaitStatus && hasChange(CLIENT_WAIT_STATUS_PATCH)) state.tools.showClientWaitStatus();
  const wait = state.tools.awaitClient(
    index,
    {
      toolCallId: call.id,
      toolName: call.name,
      args: call.arguments,
      since: new Date(Date.now()).toISOString(),
      ...(timeout !== undefined ? { timeout } : {}),
    },
    spec.client?.result,
  );
  // With the status shown, published once the batch's other calls have started (they start in this same
  // activation, after this call): "waiting_for_client" only when nothing else runs, without a flicker.
  if (state.tools.clientWaitStatus) void Promise.resolve().then(() => state.publishDetails());
  else state.publishDetails();
  emitEvent({
    type: "tool_execution_update",
    toolCallId: call.id,
    toolName: call.name,
    partial: {
      content: [{ type: "text", text: `Waiting for a client to submit the result of ${call.name} (${call.id}).` }],
      details: { waitingFor: "client", ...(timeout !== undefined ? { timeout } : {}) },
    },
  });
  try {
    const decided = () => wait.submitted !== undefined || state.inbox.steering.length > 0;
    const inTime = timeout === undefined ? (await condition(decided), true) : await condition(decided, timeout);
    if (wait.submitted) return wait.submitted;
    if (!inTime) return errorOutput(`Tool ${call.name}: no result from the client within ${String(timeout)}.`);
    return errorOutput(SKIPPED_BY_STEERING);
  } finally {
    state.tools.clientWaitEnded(index, call.id);
    state.publishDetails();
  }
}

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
  state: RunState,
  index: number,
  call: ToolCall,
  timeout: string | number | undefined,
): Promise<string | undefined> {
  const wait = state.tools.awaitApproval(index, call, new Date(Date.now()).toISOString());
  state.publishDetails();
  metrics.approvalsWaiting(1);
  try {
    const decided = () => wait.decision !== undefined || state.inbox.steering.length > 0;
    const inTime = timeout === undefined ? (await condition(decided), true) : await condition(decided, timeout);
    if (!inTime) return `Tool call denied: no approval within ${timeout}.`;
    if (!wait.decision) return SKIPPED_BY_STEERING;
    return wait.decision.approved
      ? undefined
      : `Tool call denied by the user${wait.decision.reason ? `: ${wait.decision.reason}` : "."}`;
  } finally {
    metrics.approvalsWaiting(-1);
    state.tools.approvalEnded(index, call.id);
    state.publishDetails();
  }
}

/** A fast tool's call as a local activity (see AgentTool.fast); the model calls refer to its result by `outputKey`. */
async function executeFast(
  spec: ToolSpec,
  input: ExecuteToolInput & { outputKey: string },
  conversation: Conversation,
): Promise<ExecuteToolOutput> {
  const options: LocalActivityOptions = {
    summary: toolSummary(spec.name, input.args),
    ...(spec.activity?.startToCloseTimeout !== undefined
      ? { startToCloseTimeout: spec.activity.startToCloseTimeout }
      : {}),
    ...(spec.activity?.retry !== undefined ? { retry: { ...TOOL_DEFAULTS.retry, ...spec.activity.retry } } : {}),
  } as LocalActivityOptions;
  const { result, isError, modelContent } = await executeFastTool.executeWithOptions(options, [input]);
  conversation.noteActivityOutput(result.content, input.outputKey, modelContent);
  return { result, isError, ...(modelContent ? { modelContent } : {}) };
}

/** One tool call as one activity (a local one for fast tools). */
function executeCall(run: RunContext, spec: ToolSpec, call: ToolCall, index: number): Promise<ExecuteToolOutput> {
  const { state } = run;
  const limits = run.input.toolResultLimits;
  const options = activityOverrides(spec.activity, toolSummary(spec.name, call.arguments));
  // Tool-call ids are the model's; the turn and position keep them unique within the run.
  options.activityId = `tool-${state.turn}-${index}-${call.id}`.slice(0, 200);
  const args = { toolCallId: call.id, toolName: call.name, args: call.arguments, ...(limits ? { limits } : {}) };
  if (spec.local && hasChange(LOCAL_ACTIVITIES_PATCH))
    return executeFast(spec, { ...args, outputKey: options.activityId }, state.conversation).catch((err: unknown) =>
      toolFailed(spec, call, state, err),
    );
  return executeTool.executeWithOptions(options, [{ ...args, doneAt: true }]).then(
    (output) => {
      state.conversation.noteActivityOutput(output.result.content, options.activityId!, output.modelContent);
      // Run again after its worker stopped: that worker may be the one the next model call would be sent to, and a
      // call queued for a dead worker waits out its schedule-to-start timeout on top of this call's heartbeat timeout.
      if ((output.attempt ?? 1) > 1) state.route.leave();
      state.route.noteTaskLag(output.doneAtMs);
      return output;
    },
    (err: unknown) => toolFailed(spec, call, state, err),
  );
}

/** A call that failed for good: its error result, which the model sees (a cancel stays a cancel). */
function toolFailed(spec: ToolSpec, call: ToolCall, state: RunState, err: unknown): ExecuteToolOutput {
  // A cancel whose tool worker is dead ends in a timeout: still a cancel.
  if (!(err instanceof ActivityFailure) || isCancellation(err) || CancellationScope.current().consideredCancelled)
    throw err;
  if (err.cause instanceof TimeoutFailure) {
    state.route.leave();
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
