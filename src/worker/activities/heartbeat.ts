/** Heartbeats on a timer so a dead worker is noticed within the heartbeat timeout, not the start-to-close timeout. */
import { Context } from "@temporalio/activity";

/**
 * A third of the heartbeat timeout, at most 1 s: cancellation reaches an
 * activity only in a heartbeat's answer, so this bounds how long a cancel takes
 * (the worker's throttle is set to 1 s to match).
 */
export function heartbeatIntervalMs(heartbeatTimeoutMs: number | undefined): number {
  if (!heartbeatTimeoutMs) return 1000;
  return Math.min(1000, Math.max(100, Math.floor(heartbeatTimeoutMs / 3)));
}

/** When an activity that is still running sends its first heartbeat. */
export const FIRST_BEAT_MS = 100;

/**
 * Runs `work` with a heartbeat timer. The signal is the activity's cancellation
 * signal: cancellation reaches the activity through heartbeats.
 */
export async function withHeartbeats<T>(work: (signal: AbortSignal) => Promise<T>): Promise<T> {
  const ctx = Context.current();
  // Local activities cannot heartbeat (the worker cancels them itself).
  if (ctx.info.isLocal) return work(ctx.cancellationSignal);
  // The first beat comes after FIRST_BEAT_MS, not at the start: most activities (tool calls, short answers)
  // finish sooner and cost the server no heartbeat write; a longer one learns of a cancel from then on.
  let timer: ReturnType<typeof setInterval> | undefined;
  const first = setTimeout(() => {
    ctx.heartbeat();
    timer = setInterval(() => ctx.heartbeat(), heartbeatIntervalMs(ctx.info.heartbeatTimeoutMs));
  }, FIRST_BEAT_MS);
  try {
    return await work(ctx.cancellationSignal);
  } finally {
    clearTimeout(first);
    clearInterval(timer);
  }
}

/** The run the current activity belongs to, for event sinks. */
export function currentRun(): { workflowId: string; runId: string } {
  const execution = Context.current().info.workflowExecution;
  return { workflowId: execution?.workflowId ?? "", runId: execution?.runId ?? "" };
}
