/**
 * Fast failover: a SIGKILLed worker's runs go on within a presence timeout (2 s) of its last heartbeat.
 *
 * Without it, each of a dead worker's runs waits out its own call's heartbeat timeout, then ~1 s for the dead
 * worker's sticky queue, and then its turn in the replays every survivor does at once: on a 3-worker fleet with
 * headroom the slowest runs lost 10 s against the 5 s heartbeat (README, "Scaling and sizing").
 *
 * With it, every worker runs a presence workflow (on the shared queue) whose one activity runs on the worker's own
 * queue and heartbeats, every 0.5 s, the activity attempts the worker is running and the runs whose workflow
 * tasks it ran lately. When the heartbeats stop, the workflow's next task goes to a survivor, which clears those
 * runs' sticky queues and fails those attempts by id with a heartbeat timeout: to the run, exactly what the
 * server would have said a few seconds later (a routed model call goes to the shared queue, a tool call is retried
 * by Temporal). A worker that was alive after all (a pause past the timeout) finds its presence gone, starts a new
 * one, and its failed attempts' results are refused by the server: the runs have moved on.
 */
import { Context, type Info } from "@temporalio/activity";
import { ActivityNotFoundError, type Client } from "@temporalio/client";
import { CancelledFailure, msToNumber, TimeoutFailure, TimeoutType, type Duration } from "@temporalio/common";
import type {
  ActivityExecuteInput,
  ActivityInboundCallsInterceptor,
  ActivityInterceptorsFactory,
  InjectedSinks,
  Next,
} from "@temporalio/worker";
import type { AgentSinks } from "../workflows/definitions.js";
import { WORKER_PRESENCE_WORKFLOW } from "../workflows/presence.js";
import type { FailoverResult, HeldCall, HeldRun, PresenceEnd, PresenceInput, PresenceReport } from "./types.js";

export type { PresenceOutcome } from "./types.js";
export { WORKER_PRESENCE_WORKFLOW };

type FleetSink = InjectedSinks<AgentSinks>["fleet"];

/** The workflow's `fleet` sink: on every worker that runs (or replays) a run's task, so also during replay. */
export function fleetSink(presence: WorkerPresence | undefined): FleetSink {
  return {
    runSeen: {
      fn: presence ? (info) => presence.runSeen(info.workflowId, info.runId) : () => {},
      callDuringReplay: true,
    },
  };
}

/**
 * Default presence timeout: how long after its last heartbeat a worker is pinged on its own queue, and how long
 * the ping waits before the worker is taken for dead (at 1 s with no ping, a loaded 2-core machine once took five
 * live workers for dead in a row, and each false failover's replays loaded the others more).
 */
export const DEFAULT_PRESENCE_TIMEOUT = "1s";
/** The presence activity ends after this long and its workflow continues as new. */
const RENEW_AFTER_MS = 60 * 60 * 1000;
/** How often the presence activity reports when nothing changes. */
const BEAT_MS = 500;
/**
 * The own queue's heartbeat throttle with fast failover: a call that starts is in the report that reaches the
 * server within this (a call started after the last report would wait out its own heartbeat timeout).
 */
export const PRESENCE_THROTTLE = "100ms";
/** A run not seen on this worker for this long has likely moved (or waits for a person): it is not reported. */
const RUN_FORGOTTEN_MS = 10 * 60 * 1000;
/** At most this many runs in a report (the most recent): a heartbeat stays a few tens of KB. */
const MAX_REPORTED_RUNS = 2000;
/** Clears and fails at most this many at once: a dead worker's hundreds of runs must not flood the server. */
const FAILOVER_CONCURRENCY = 16;

const key = (c: HeldCall) => `${c.workflowId}\u0000${c.runId}\u0000${c.activityId}`;

/**
 * What one worker has in hand, reported by its presence activity: the activity attempts running on it (both its
 * queues) and the runs whose workflow tasks it ran lately (the workflow's `fleet` sink, also called on replay).
 */
export class WorkerPresence {
  private readonly calls = new Map<string, HeldCall>();
  private readonly runs = new Map<string, HeldRun & { seenAt: number }>();
  private attempt = 0;
  private started?: { client: Client; taskQueue: string };
  private wake?: () => void;
  private adopter?: (queue: string) => Promise<void>;
  /** Set by the worker: whether it is shutting down (its presence ends then, not at the end of the drain). */
  stopping: () => boolean = () => false;
  private readonly adopted = new Set<string>();

  constructor(
    /** The worker's own queue (its presence activity runs there). */
    readonly workerQueue: string,
    /** Heartbeat timeout of the presence activity, ms. */
    readonly timeoutMs: number,
  ) {}

  /** Counts an activity attempt in (on start) and out (when it settles). */
  readonly activityInterceptor: ActivityInterceptorsFactory = (ctx) => ({
    inbound: new TrackCalls(this, ctx.info),
  });

  /** A workflow task of this run ran here (the `fleet` sink). */
  runSeen(workflowId: string, runId: string): void {
    this.runs.delete(runId);
    this.runs.set(runId, { workflowId, runId, seenAt: Date.now() });
  }

  /** @internal */
  callStarted(call: HeldCall): void {
    this.calls.set(key(call), call);
    this.wake?.();
  }

  /** Resolves after `ms`, or as soon as a call starts. */
  changed(ms: number, signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal.removeEventListener("abort", done);
        if (this.wake === done) this.wake = undefined;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal.addEventListener("abort", done);
      this.wake = done;
    });
  }

  /** @internal */
  callEnded(call: HeldCall): void {
    this.calls.delete(key(call));
  }

  /** Set by the worker: how it polls another worker's own queue for a while (`adopt`). */
  onAdopt(adopter: (queue: string) => Promise<void>): void {
    this.adopter = adopter;
  }

  /**
   * Polls a dead worker's own queue for a while: runs whose context it held still send their next model call
   * there (the workflow cannot know it died), and it would wait out its schedule-to-start timeout. Taken here, the
   * call misses the cache once and names this worker's queue for the run's next one. Once per queue.
   */
  async adopt(queue: string): Promise<boolean> {
    if (!this.adopter || queue === this.workerQueue || this.adopted.has(queue)) return false;
    this.adopted.add(queue);
    await this.adopter(queue);
    return true;
  }

  /** Starts this worker's presence workflow on the shared queue `taskQueue`. */
  async start(client: Client, taskQueue: string): Promise<void> {
    this.started = { client, taskQueue };
    const input: PresenceInput = {
      workerQueue: this.workerQueue,
      timeoutMs: this.timeoutMs,
      renewAfterMs: RENEW_AFTER_MS,
    };
    await client.workflow.start(WORKER_PRESENCE_WORKFLOW, {
      taskQueue,
      workflowId: `jai-presence-${this.workerQueue}-${++this.attempt}`,
      args: [input],
    });
  }

  /**
   * This worker was taken for dead while alive (a pause past the timeout): its runs have been failed over, and it
   * starts a new presence so that it is watched again.
   */
  restart(): void {
    const started = this.started;
    if (!started) return;
    this.start(started.client, started.taskQueue).catch((err) =>
      console.warn(`jai: could not restart the presence of ${this.workerQueue}: ${String(err)}`),
    );
  }

  /** What the next heartbeat says. */
  report(now = Date.now()): PresenceReport {
    // Oldest first (insertion order, refreshed on each sighting): drop the forgotten, keep the newest.
    for (const [runId, run] of this.runs) {
      if (now - run.seenAt <= RUN_FORGOTTEN_MS && this.runs.size <= MAX_REPORTED_RUNS) break;
      this.runs.delete(runId);
    }
    return {
      calls: [...this.calls.values()],
      runs: [...this.runs.values()].map(({ workflowId, runId }) => ({ workflowId, runId })),
    };
  }
}

class TrackCalls implements ActivityInboundCallsInterceptor {
  constructor(
    private readonly presence: WorkerPresence,
    private readonly info: Info,
  ) {}

  async execute(input: ActivityExecuteInput, next: Next<ActivityInboundCallsInterceptor, "execute">) {
    const execution = this.info.workflowExecution;
    // Local activities cannot be failed by id, and the presence activity is the watcher itself.
    if (this.info.isLocal || !execution || this.info.activityType === "workerPresence") return next(input);
    const call = { workflowId: execution.workflowId, runId: execution.runId, activityId: this.info.activityId };
    this.presence.callStarted(call);
    try {
      return await next(input);
    } finally {
      this.presence.callEnded(call);
    }
  }
}

/** The presence activities: `workerPresence` (on the watched worker) and `failOverWorker` (on a survivor). */
export function createPresenceActivities(client: () => Client | undefined, presence: WorkerPresence | undefined) {
  return {
    /** Heartbeats the worker's report until renewal or shutdown. */
    async workerPresence(input: { renewAfterMs: number }): Promise<PresenceEnd> {
      const ctx = Context.current();
      if (!presence || ctx.info.taskQueue !== presence.workerQueue)
        throw new Error(`workerPresence ran on ${ctx.info.taskQueue}, not the queue it watches`);
      const execution = ctx.info.workflowExecution!;
      // The workflow's next task (after this activity ends) must not wait for this worker's sticky queue: this
      // worker may be dead by then.
      await client()?.workflowService.resetStickyTaskQueue({
        namespace: ctx.info.workflowNamespace,
        execution: { workflowId: execution.workflowId, runId: execution.runId },
      });
      const renewAt = Date.now() + input.renewAfterMs;
      const signal = ctx.cancellationSignal;
      while (Date.now() < renewAt && !signal.aborted) {
        if (presence.stopping()) return "stopped";
        ctx.heartbeat(presence.report());
        await presence.changed(BEAT_MS, signal);
      }
      if (!signal.aborted) return "renew";
      const why = ctx.cancellationDetails;
      if (why?.workerShutdown) return "stopped";
      // Timed out while alive (the server no longer knows this attempt): be watched again.
      if (why?.notFound || why?.timedOut) presence.restart();
      throw new CancelledFailure(`presence of ${presence.workerQueue} cancelled`);
    },

    /** Answers a presence workflow that lost this worker's heartbeats: the queue it watches, when it is this one's. */
    async workerPing(): Promise<string> {
      return presence?.workerQueue ?? "";
    },

    /** Clears the dead worker's runs' sticky queues and fails its calls with a heartbeat timeout. */
    async failOverWorker(input: { workerQueue: string; report: PresenceReport }): Promise<FailoverResult> {
      const c = client();
      if (!c) throw new Error("failOverWorker needs the worker's client");
      const namespace = Context.current().info.workflowNamespace;
      const unstick = async (run: HeldRun) => {
        try {
          await c.workflowService.resetStickyTaskQueue({ namespace, execution: run });
          return true;
        } catch {
          return false; // ended, or not found: nothing waits on it
        }
      };
      const failure = () =>
        new TimeoutFailure(`worker ${input.workerQueue} stopped heartbeating`, undefined, TimeoutType.HEARTBEAT);
      // At once, while the calls fail: a run's next call may be on its way to the dead worker's queue.
      const adopting = (presence?.adopt(input.workerQueue) ?? Promise.resolve(false)).catch((err) => {
        console.warn(`jai: could not poll ${input.workerQueue} for the dead worker: ${String(err)}`);
        return false;
      });
      let callsFailed = 0;
      let runsUnstuck = 0;
      const unstuck = new Set<string>();
      // The calls first: each one's run is cleared before its call fails, so the task the failure makes goes to any
      // worker at once.
      await eachLimited(input.report.calls, async (call) => {
        if (!unstuck.has(call.runId)) {
          unstuck.add(call.runId);
          if (await unstick(call)) runsUnstuck++;
        }
        try {
          await c.activity.fail(call, failure());
          callsFailed++;
        } catch (err) {
          if (!(err instanceof ActivityNotFoundError)) throw err; // done already, or the run ended
        }
      });
      await eachLimited(
        input.report.runs.filter((r) => !unstuck.has(r.runId)),
        async (run) => {
          if (await unstick(run)) runsUnstuck++;
        },
      );
      return { callsFailed, runsUnstuck, queueAdopted: await adopting };
    },
  };
}

async function eachLimited<T>(items: T[], fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length) await fn(items[next++]);
  };
  await Promise.all(Array.from({ length: Math.min(FAILOVER_CONCURRENCY, items.length) }, lane));
}

/** The presence timeout in ms, from the worker option. */
export function presenceTimeoutMs(timeout: Duration | undefined): number {
  return msToNumber(timeout ?? DEFAULT_PRESENCE_TIMEOUT);
}
