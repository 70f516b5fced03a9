/**
 * A worker's presence: one activity on the worker's own queue that heartbeats what the worker has in hand. When
 * the heartbeats stop (the worker died), another worker fails its calls by id and clears its runs' sticky queues,
 * so the runs go on within the presence timeout instead of each waiting out its own heartbeat timeout, then the
 * sticky timeout, in one burst of replays. See src/failover/presence.ts.
 */
import {
  ActivityFailure,
  continueAsNew,
  proxyActivities,
  proxyLocalActivities,
  sleep,
  TimeoutFailure,
} from "@temporalio/workflow";
import type { FailoverResult, PresenceEnd, PresenceInput, PresenceOutcome, PresenceReport } from "../failover/types.js";

/** Workflow type name of a worker's presence. */
export const WORKER_PRESENCE_WORKFLOW = "agentWorkerPresence";

interface PresenceActivities {
  workerPresence(input: { renewAfterMs: number }): Promise<PresenceEnd>;
  workerPing(): Promise<string>;
  failOverWorker(input: { workerQueue: string; report: PresenceReport }): Promise<FailoverResult>;
}

export async function agentWorkerPresence(input: PresenceInput): Promise<PresenceOutcome> {
  const { workerPresence } = proxyActivities<PresenceActivities>({
    taskQueue: input.workerQueue,
    heartbeatTimeout: input.timeoutMs,
    // A worker that never picks it up is gone already, with nothing in hand this workflow could name.
    scheduleToStartTimeout: Math.max(10_000, 5 * input.timeoutMs),
    startToCloseTimeout: input.renewAfterMs + 60_000,
    retry: { maximumAttempts: 1 },
  });
  // A worker whose heartbeats were late but that answers this in time is alive (a pause, a slow server): it is
  // not failed over, and it starts a presence of its own when it hears this one's was given up. Only the
  // worker itself answers with its queue's name (a survivor polling that queue for it names its own).
  const { workerPing } = proxyActivities<PresenceActivities>({
    taskQueue: input.workerQueue,
    scheduleToStartTimeout: input.timeoutMs,
    startToCloseTimeout: Math.max(5000, input.timeoutMs),
    retry: { maximumAttempts: 1 },
  });
  const answers = () =>
    workerPing().then(
      (queue) => queue === input.workerQueue,
      () => false,
    );
  // Runs on whichever worker takes this task: a survivor, at once (the presence activity cleared this run's
  // sticky queue when it started, so the task does not wait for the dead worker's).
  const { failOverWorker } = proxyLocalActivities<PresenceActivities>({
    startToCloseTimeout: "1 minute",
    retry: { maximumAttempts: 3, initialInterval: "200ms" },
  });
  try {
    const end = await workerPresence({ renewAfterMs: input.renewAfterMs });
    if (end === "renew") await continueAsNew<typeof agentWorkerPresence>(input);
    return { worker: "stopped" };
  } catch (err) {
    if (!(err instanceof ActivityFailure)) throw err;
    if (!(err.cause instanceof TimeoutFailure)) {
      // Not a silence: e.g. a worker polling this queue for a dead one took the activity and has none. Again.
      await sleep(1000);
      await continueAsNew<typeof agentWorkerPresence>(input);
    }
    if (await answers()) return { worker: "alive" };
    const report = ((err.cause as TimeoutFailure).lastHeartbeatDetails as PresenceReport | undefined) ?? {
      calls: [],
      runs: [],
    };
    const failover = await failOverWorker({ workerQueue: input.workerQueue, report });
    return { worker: "lost", failover };
  }
}
