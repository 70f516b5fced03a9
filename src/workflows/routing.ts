/**
 * Where a run's next model call goes: the worker that answered its last one
 * holds the run's context in its cache, so the call is sent to that worker's
 * own queue, unless something says the worker may be gone. Model calls
 * (model-call.ts) set the route; tool calls (tool-calls.ts) may only leave it.
 */
import { workflowInfo, type ActivityOptions } from "@temporalio/workflow";
import { msToNumber } from "@temporalio/common";
import type { AgentRunInput } from "../shared/contracts.js";
import type { ModelReply } from "../shared/wire.js";
import { MODEL_DEFAULTS } from "./activity-proxies.js";

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
 * But never longer than the call's heartbeat timeout or the worker's sticky
 * queue timeout, whichever is longer (and never over this bound): a started
 * call on a dead worker is given up after the first, a workflow task queued for
 * it after the second, and a call still queued for that worker must not cost
 * its run more. At saturation the 2w + 1 s wait otherwise grew to this bound,
 * and a SIGKILLed worker cost the runs queued on it up to 31 s with a 5 s
 * heartbeat. The sticky timeout counts because a busy worker's runs keep their
 * workflow tasks that long (10 s by default): held to a 5 s heartbeat alone, a
 * saturated worker's calls left it while its runs stayed, and 3 workers served
 * 90.8 % of 200 runs' calls from their cache instead of 97 %.
 */
export const ROUTED_SCHEDULE_TO_START_MAX_MS = 30_000;

/**
 * The schedule-to-start timeout of a routed call, from how long the run's last call waited in its worker's
 * queue, the call's heartbeat timeout (default the model activity's) and the sticky queue timeout of the worker
 * it is routed to (none: a worker that predates reporting it).
 */
export function routedScheduleToStartMs(
  lastWaitMs: number | undefined,
  heartbeatMs = msToNumber(MODEL_DEFAULTS.heartbeatTimeout!),
  stickyMs = 0,
): number {
  const cap = Math.min(ROUTED_SCHEDULE_TO_START_MAX_MS, Math.max(ROUTED_SCHEDULE_TO_START_MS, heartbeatMs, stickyMs));
  return Math.min(cap, Math.max(ROUTED_SCHEDULE_TO_START_MS, 2 * (lastWaitMs ?? 0) + 1000));
}
/** A routed call whose worker stopped heartbeating is not retried there: it goes to the shared queue at once. */
const HEARTBEAT_TIMEOUT_TYPE = "TemporalTimeout:Heartbeat";

/** The options of a call sent to one worker's own queue (`taskQueue`, the run's `route.queue`). */
export function routedOptions(input: AgentRunInput, taskQueue: string, route: ModelRoute): ActivityOptions {
  const retry = input.modelActivity?.retry;
  return {
    taskQueue,
    scheduleToStartTimeout: routedScheduleToStartMs(
      route.queueWaitMs,
      input.modelActivity?.heartbeatTimeout === undefined
        ? undefined
        : msToNumber(input.modelActivity.heartbeatTimeout),
      route.stickyMs,
    ),
    retry: { ...retry, nonRetryableErrorTypes: [...(retry?.nonRetryableErrorTypes ?? []), HEARTBEAT_TIMEOUT_TYPE] },
  } as ActivityOptions;
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

/** The run's model route: a part of `RunState` that only this file writes. */
export class ModelRoute {
  /** The task queue of the worker that answered the last model call (it holds the context): the next call goes there. */
  queue?: string;
  /** How long the last model call waited in its queue: a busy worker gets longer before its calls give up on it. */
  queueWaitMs?: number;
  /** How long the sticky queue of the worker that answered the last model call holds a run's workflow task. */
  stickyMs?: number;
  /** How late the workflow task that took the run's last activity output started (see `noteTaskLag`). */
  taskLagMs?: number;

  /** The worker that answered the run's setup on any worker serves its model: the first call goes to its queue. */
  setUpBy(queue: string): void {
    this.queue = queue;
  }

  /** A routed call's answer: its worker holds the context now, and the next call goes to its queue. */
  answered(reply: ModelReply): void {
    this.queue = reply.taskQueue;
    this.queueWaitMs = reply.queueWaitMs;
    this.stickyMs = reply.stickyMs;
    this.noteTaskLag(reply.doneAtMs);
  }

  /**
   * The run's next model call goes to the shared queue rather than the worker that answered its last one: a
   * tool call of the run was run again after its worker stopped, or a workflow task of it was lost with a worker
   * (`noteTaskLag`), and that worker may be the one (a call queued for a dead worker would wait out its
   * schedule-to-start timeout). Costs a live worker one cache miss.
   */
  leave(): void {
    this.queue = undefined;
  }

  /**
   * Takes note of how late the workflow task that took an activity's output started (`doneAtMs`, the worker's
   * finish time; `Date.now()` here is the task's start, from history: replays decide the same). See `taskLost`: a
   * task lost with a worker sends the run's next model call to the shared queue, as that worker may be the one the
   * call would be routed to, and a call queued for a dead worker waits out its schedule-to-start timeout. Costs a
   * live worker one cache miss. Outputs recorded before `doneAtMs` existed change nothing.
   */
  noteTaskLag(doneAtMs: number | undefined): void {
    if (doneAtMs === undefined) return;
    const lag = Math.max(0, Date.now() - doneAtMs);
    if (taskLost(lag, this.taskLagMs, workflowInfo().taskTimeoutMs)) this.leave();
    this.taskLagMs = lag;
  }
}
