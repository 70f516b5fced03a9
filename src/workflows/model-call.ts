/** One model call as one activity; its failures become data the loop can end on. */
import {
  ActivityFailure,
  ApplicationFailure,
  CancellationScope,
  CancelledFailure,
  isCancellation,
  proxySinks,
  TimeoutFailure,
  workflowInfo,
  type ActivityOptions,
} from "@temporalio/workflow";
import { msToNumber } from "@temporalio/common";
import type { AssistantMessage } from "@jai/ai";
import type { AgentRunInput, ModelReply, RunSetup } from "../types.js";
import { modelContextRef } from "./context-ref.js";
import { fitContext, modelTools } from "./context-fit.js";
import type { AgentSinks } from "./definitions.js";
import type { RunState } from "./run-state.js";
import { modelSummary } from "./summary.js";
import { MODEL_DEFAULTS, activityOverrides, streamAssistantMessage } from "./activities.js";
import { emptyUsage } from "../common/usage.js";
import { FailureType } from "../common/failure-types.js";
import { MODEL_ROUTE_PATCH, hasChange } from "./patches.js";

/**
 * How long a routed call waits for its worker to pick it up before it goes to
 * the shared queue: a dead worker costs this, a live one answers in
 * milliseconds (its own queue holds only its runs' model calls).
 */
const ROUTED_SCHEDULE_TO_START_MS = 2000;
export const ROUTED_SCHEDULE_TO_START = `${ROUTED_SCHEDULE_TO_START_MS / 1000}s`;
/**
 * A busy worker is not a dead one: when the last call waited `w` ms in its
 * queue, the next one waits up to 2w + 1 s (at least the 2 s above) before it
 * gives up on the worker that holds its context. Otherwise, once a saturated
 * worker pool's queues take longer than 2 s, calls leave their worker and miss its
 * cache exactly when load is highest.
 *
 * But never longer than the call's heartbeat timeout (and never over this
 * bound): that is how long a started call on a dead worker takes to be given
 * up, and a call still queued for that worker must not cost its run more. At
 * saturation the 2w + 1 s wait otherwise grew to this bound, and a SIGKILLed
 * worker cost the runs queued on it up to 31 s with a 5 s heartbeat.
 */
export const ROUTED_SCHEDULE_TO_START_MAX_MS = 30_000;

/**
 * The schedule-to-start timeout of a routed call, from how long the run's last call waited in its worker's
 * queue and the call's heartbeat timeout (default the model activity's).
 */
export function routedScheduleToStartMs(
  lastWaitMs: number | undefined,
  heartbeatMs = msToNumber(MODEL_DEFAULTS.heartbeatTimeout!),
): number {
  const cap = Math.min(ROUTED_SCHEDULE_TO_START_MAX_MS, Math.max(ROUTED_SCHEDULE_TO_START_MS, heartbeatMs));
  return Math.min(cap, Math.max(ROUTED_SCHEDULE_TO_START_MS, 2 * (lastWaitMs ?? 0) + 1000));
}
/** A routed call whose worker stopped heartbeating is not retried there: it goes to the shared queue at once. */
const HEARTBEAT_TIMEOUT_TYPE = "TemporalTimeout:Heartbeat";
const { agent, extensions } = proxySinks<AgentSinks>();

/** Thrown when the run is cancelled during a model call; carries what had streamed by then. */
export class CancelledDuringModelCall extends Error {
  constructor(
    readonly partial: AssistantMessage | undefined,
    readonly original: unknown,
  ) {
    super("cancelled during model call");
  }
}

function partialOf(err: ActivityFailure): AssistantMessage | undefined {
  const details = err.cause instanceof CancelledFailure ? err.cause.details : undefined;
  const partial = details?.[0] as AssistantMessage | undefined;
  return partial && partial.role === "assistant" ? { ...partial, stopReason: "aborted" } : undefined;
}

/** The options of a call sent to one worker's own queue. */
function routedOptions(input: AgentRunInput, taskQueue: string, lastWaitMs: number | undefined): ActivityOptions {
  const retry = input.modelActivity?.retry;
  return {
    taskQueue,
    scheduleToStartTimeout: routedScheduleToStartMs(
      lastWaitMs,
      input.modelActivity?.heartbeatTimeout === undefined
        ? undefined
        : msToNumber(input.modelActivity.heartbeatTimeout),
    ),
    retry: { ...retry, nonRetryableErrorTypes: [...(retry?.nonRetryableErrorTypes ?? []), HEARTBEAT_TIMEOUT_TYPE] },
  } as ActivityOptions;
}

/**
 * The run's next model call goes to the shared queue rather than the worker that answered its last one: a
 * tool call of the run was run again after its worker stopped, or a workflow task of it was lost with a worker
 * (`noteTaskLag`), and that worker may be the one (a call queued for a dead worker would wait out its
 * schedule-to-start timeout). Costs a live worker one cache miss.
 */
export function leaveModelWorker(run: RunState): void {
  run.modelQueue = undefined;
}

/**
 * Takes note of how late the workflow task that took an activity's output started (`doneAtMs`, the worker's
 * finish time; `Date.now()` here is the task's start, from history: replays decide the same). See `taskLost`: a
 * task lost with a worker sends the run's next model call to the shared queue, as that worker may be the one the
 * call would be routed to, and a call queued for a dead worker waits out its schedule-to-start timeout. Costs a
 * live worker one cache miss. Outputs recorded before `doneAtMs` existed change nothing.
 */
export function noteTaskLag(run: RunState, doneAtMs: number | undefined): void {
  if (doneAtMs === undefined) return;
  const lag = Math.max(0, Date.now() - doneAtMs);
  if (taskLost(lag, run.taskLagMs, workflowInfo().taskTimeoutMs)) leaveModelWorker(run);
  run.taskLagMs = lag;
}

/**
 * Whether a workflow task that started `lagMs` after its output was lost with a worker: a worker took it and died
 * (the task timed out), and another took it up to `LOST_TASK_WINDOW_MS` later, in a run whose last task started
 * within `KEPT_PACE_MS` (`lastLagMs`; none yet: no telling) — workers that keep up. Any later, or after a slow
 * task, it is a saturated worker pool's queue, not a death: at 500 runs on 3 workers the median task starts 0.95 s late
 * and a tenth over 36 s, and a looser rule (lag past the timeout and past twice the last lag + 1 s) sent a tenth of
 * the model calls to the shared queue at 1,000 runs (hit rate 87% against 98%). There the routed call's
 * schedule-to-start timeout is the only test.
 */
export function taskLost(lagMs: number, lastLagMs: number | undefined, taskTimeoutMs: number): boolean {
  return (
    lagMs >= taskTimeoutMs &&
    lagMs <= taskTimeoutMs + LOST_TASK_WINDOW_MS &&
    lastLagMs !== undefined &&
    lastLagMs < KEPT_PACE_MS
  );
}
const LOST_TASK_WINDOW_MS = 3000;
const KEPT_PACE_MS = 1000;

const isReply = (answer: AssistantMessage | ModelReply): answer is ModelReply =>
  (answer as AssistantMessage).role !== "assistant";

const isRouteLost = (err: unknown) =>
  err instanceof ActivityFailure &&
  err.cause instanceof TimeoutFailure &&
  (err.cause.timeoutType === "SCHEDULE_TO_START" || err.cause.timeoutType === "HEARTBEAT");

const isOverflow = (err: ActivityFailure) =>
  err.cause instanceof ApplicationFailure && err.cause.type === FailureType.ContextOverflow;

/**
 * Streams one assistant message. A context overflow compacts the context and
 * calls once more; a call that fails for good becomes a message with stopReason "error".
 *
 * A `then` instead of an async function: every promise a workflow makes costs
 * each replay of it a captured stack trace, and replays are what a dead
 * worker's runs wait for.
 */
export function callModel(
  input: AgentRunInput,
  setup: RunSetup,
  run: RunState,
  retriedOverflow = false,
): Promise<AssistantMessage> {
  const { model } = setup;
  // This worker holds the run now (a worker taking over a run replays this too): worker extensions may track it.
  extensions.runSeen();
  const route = hasChange(MODEL_ROUTE_PATCH);
  const queue = route ? run.modelQueue : undefined;
  const options = activityOverrides(input.modelActivity, modelSummary(run.turn, model.provider, model.id));
  if (queue) Object.assign(options, routedOptions(input, queue, run.modelQueueWaitMs));
  const call = streamAssistantMessage.executeWithOptions(options, [
    {
      model,
      systemPrompt: input.systemPrompt,
      context: modelContextRef(run),
      tools: modelTools(setup),
      turn: run.turn,
      ...(route ? { route: true, doneAt: true } : {}),
    },
  ]) as Promise<AssistantMessage | ModelReply>;
  return call.then(
    (answer) => {
      // A worker that predates routing answers with the message alone (and names no queue).
      const reply: ModelReply = isReply(answer) ? answer : { message: answer };
      if (route) {
        run.modelQueue = reply.taskQueue;
        run.modelQueueWaitMs = reply.queueWaitMs;
        noteTaskLag(run, reply.doneAtMs);
      }
      // The worker that answered cached the context and its reply.
      run.workerKnows = run.context.length + 1;
      return reply.message;
    },
    (err: unknown) => modelCallFailed(input, setup, run, retriedOverflow, queue, err),
  );
}

async function modelCallFailed(
  input: AgentRunInput,
  setup: RunSetup,
  run: RunState,
  retriedOverflow: boolean,
  queue: string | undefined,
  err: unknown,
): Promise<AssistantMessage> {
  const { model } = setup;
  // The worker the call was sent to is gone (not picked up in time, or stopped heartbeating): any worker takes it.
  if (queue && isRouteLost(err) && !CancellationScope.current().consideredCancelled) {
    run.modelQueue = undefined;
    return callModel(input, setup, run, retriedOverflow);
  }
  // A cancel whose model worker is dead ends in a heartbeat timeout, not a cancellation: it is still a cancel.
  if (isCancellation(err) || CancellationScope.current().consideredCancelled) {
    throw new CancelledDuringModelCall(err instanceof ActivityFailure ? partialOf(err) : undefined, err);
  }
  if (!(err instanceof ActivityFailure)) throw err;
  if (isOverflow(err) && !retriedOverflow && (await fitContext(input, setup, run, "overflow")))
    return callModel(input, setup, run, true);
  const message: AssistantMessage = {
    role: "assistant",
    content: [],
    api: model.api,
    provider: model.provider,
    model: model.id,
    usage: emptyUsage(),
    stopReason: "error",
    errorMessage: isOverflow(err)
      ? (err.cause?.message ?? "Context overflow")
      : `Model call failed: ${err.cause?.message ?? err.message}`,
    timestamp: Date.now(),
  };
  agent.emit({ type: "message_start", message });
  return message;
}
