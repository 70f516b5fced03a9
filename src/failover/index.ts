/**
 * `jai-agent/failover`: fast failover as a worker extension (src/extension.ts), off unless added:
 * `createAgentWorker({ ..., extensions: [fastFailover({ secret })] })`. See docs/failover.md.
 *
 * Each worker heartbeats what it has in hand through a presence workflow on the fleet queue
 * (`<taskQueue>-fleet`, polled by a small workflow worker of its own), and links to its peers; when a worker dies,
 * another fails its calls, frees its runs and polls its own queue, instead of each run waiting out its own
 * heartbeat timeout and the sticky timeout.
 */
import { existsSync } from "node:fs";
import { fileURLToPath } from "node:url";
import type { DataConverter, Duration } from "@temporalio/common";
import { bundleWorkflowCode, type Worker } from "@temporalio/worker";
import type { AgentWorkerExtension, AgentWorkerHost, AgentWorkerPollers } from "../extension.js";
import { quietLogger, webpackConfigHook } from "../worker.js";
import type { LinkOptions } from "./links.js";
import {
  createPresenceActivities,
  fleetTaskQueue,
  PRESENCE_SLOTS,
  PRESENCE_THROTTLE,
  presenceTimeoutMs,
  WorkerPresence,
} from "./presence.js";

export { fleetTaskQueue, presenceTimeoutMs, WORKER_PRESENCE_WORKFLOW, type PresenceOutcome } from "./presence.js";
export { MIN_SECRET_LENGTH, type LinkOptions } from "./links.js";

/** Fast failover's replay cap when none is set (docs/failover.md): its default `maxConcurrentReplays`. */
export const FAILOVER_REPLAYS = 10;

/**
 * Fast failover's sticky queue timeout when none is set: a run whose next workflow task was already in a dead
 * worker's sticky queue when it was failed over (freeing its runs moves only later tasks) waits this long. The
 * price, at saturation: a task that waits as long in a busy worker's sticky queue goes to the shared queue and may
 * wait there far longer (docs/failover.md, "Sizing").
 */
export const FAILOVER_STICKY_TIMEOUT = "1s";

/**
 * How long a worker polls a dead worker's own queue after failing it over: runs that held their context there
 * send their next model call to it until one is answered elsewhere (a run waiting on a long tool or a person may
 * send it later, and waits out the call's schedule-to-start timeout instead).
 */
const ADOPT_MS = 15 * 60 * 1000;

export interface FastFailoverOptions {
  /** No heartbeat from a worker for this long, and no answer to its ping as long, and it is taken for dead; default 1 s. */
  presenceTimeout?: Duration;
  /**
   * Links (default on): each worker listens on a TCP port and connects to every other fast-failover worker of the
   * queue (found through their presences), so a killed worker, whose kernel closes its sockets at once, is failed
   * over within a second or two. `false` turns them off.
   */
  links?: false | LinkOptions;
  /**
   * The fleet's shared secret (16+ characters, the same on every worker of the queue): links prove it both ways,
   * presences' memos and a peer's news of a lost worker carry an HMAC with it. Without it links listen on, and
   * link to, loopback only, and a worker is failed over only when its ping goes unanswered.
   */
  secret?: string;
  /** A bundle of the presence workflow (`bundleFailoverWorkflows()`), to skip bundling it when the worker starts. */
  workflowBundle?: { code: string } | { codePath: string };
}

/**
 * Where fast failover's workflow module is: the presence workflow alone. Its fleet worker runs it from a bundle of
 * its own; the agent's workflows stay in the agent's bundle (the extension imports nothing from the loop).
 */
export function failoverWorkflowsPath(): string {
  const js = fileURLToPath(new URL("./presence-workflow.js", import.meta.url));
  return existsSync(js) ? js : js.replace(/\.js$/, ".ts");
}

/** Presence bundles, once per process per converter (bundling is the slow step of a worker's start). */
const presenceBundles = new Map<string, Promise<{ code: string }>>();

/**
 * The bundle of fast failover's workflows for `fastFailover({ workflowBundle })`, to bundle once and start many
 * workers from it. Under a payload codec, pass the worker's data converter.
 */
export function bundleFailoverWorkflows(dataConverter?: DataConverter): Promise<{ code: string }> {
  const key = `${dataConverter?.payloadConverterPath ?? ""}\n${dataConverter?.failureConverterPath ?? ""}`;
  let bundle = presenceBundles.get(key);
  if (!bundle) {
    bundle = bundleWorkflowCode({
      workflowsPath: failoverWorkflowsPath(),
      webpackConfigHook,
      logger: quietLogger,
      payloadConverterPath: dataConverter?.payloadConverterPath,
      failureConverterPath: dataConverter?.failureConverterPath,
    });
    presenceBundles.set(key, bundle);
    bundle.catch(() => presenceBundles.delete(key));
  }
  return bundle;
}

/**
 * Fast failover (needs `routeModelCalls`): a killed worker's runs go on within a second or so (links) or about two
 * presence timeouts, not their calls' heartbeat timeout. Contract: every worker of the queue runs this version
 * with it (an older one cannot run the presence workflow or its fail-over).
 */
export function fastFailover(options: FastFailoverOptions = {}): AgentWorkerExtension {
  // Checked where the worker is configured, before it connects to anything.
  const timeoutMs = presenceTimeoutMs(options.presenceTimeout);
  return { name: "fastFailover", setup: (host) => setUp(host, options, timeoutMs) };
}

async function setUp(host: AgentWorkerHost, options: FastFailoverOptions, timeoutMs: number) {
  if (!host.ownTaskQueue)
    throw new TypeError(
      "fastFailover needs routeModelCalls: a worker without its own queue has nothing to watch it by",
    );
  const presence = new WorkerPresence(host.ownTaskQueue, timeoutMs, options.links, options.secret);
  // The fleet queue's workflow code, before any worker exists (bundling is the step likeliest to fail).
  const fleetBundle = options.workflowBundle ?? (await bundleFailoverWorkflows(host.dataConverter));
  const activities = createPresenceActivities(() => host.client, presence);
  const adopted = adoptQueues(host, presence);
  return {
    activityInterceptors: [presence.activityInterceptor],
    defaultMaxConcurrentReplays: FAILOVER_REPLAYS,
    defaultStickyTimeout: FAILOVER_STICKY_TIMEOUT,
    runSeen: (run: { workflowId: string; runId: string }) => presence.runSeen(run.workflowId, run.runId),
    created: async ({ worker, ownWorker }: AgentWorkerPollers) => {
      // What the server will say started a call of this worker's (shared queue, own queue): the fleet fails such
      // calls when this worker dies, also those handed to its last polls that no report of its named.
      presence.identities = [...new Set([worker.options.identity, ownWorker?.options.identity])].filter(
        (id): id is string => typeof id === "string" && id.length > 0,
      );
      // A worker draining in-flight calls (a shutdown grace time) is leaving: its presence ends at once.
      presence.stopping = () => ownWorker?.getState() !== "RUNNING" || worker.getState() !== "RUNNING";
      return createFleetWorkers(host, presence, activities, fleetBundle);
    },
    // Watched from now on (a worker that cannot start its presence still serves, and fails over the slow way).
    start: () => presence.watch(host.client, host.taskQueue),
    stop: () => {
      presence.unwatch();
      for (const w of adopted.keys()) if (w.getState() === "RUNNING") w.shutdown();
    },
    stopped: async () => {
      await Promise.all(adopted.values());
      // Stopped and drained, its presence ended: now its peers may see its links close.
      await presence.leave();
    },
  };
}

/** Dead workers' own queues this one polls for a while, with the agent's activities; the pollers by worker. */
function adoptQueues(host: AgentWorkerHost, presence: WorkerPresence): Map<Worker, Promise<void>> {
  const adopted = new Map<Worker, Promise<void>>();
  presence.onAdopt(async (queue) => {
    const adopter = await host.createActivityWorker(queue);
    const stop = setTimeout(() => adopter.getState() === "RUNNING" && adopter.shutdown(), ADOPT_MS);
    stop.unref();
    const running: Promise<void> = adopter
      .run()
      .catch((err) => console.warn(`jai: polling ${queue} for a dead worker ended: ${String(err)}`))
      .finally(() => {
        clearTimeout(stop);
        adopted.delete(adopter);
        presence.released(queue);
      });
    adopted.set(adopter, running);
    // This worker began to stop while the adopter was being created: it stops too.
    if (presence.stopping() && adopter.getState() === "RUNNING") adopter.shutdown();
  });
  return adopted;
}

/** The presence queue's worker and the fleet queue's. */
async function createFleetWorkers(
  host: AgentWorkerHost,
  presence: WorkerPresence,
  activities: ReturnType<typeof createPresenceActivities>,
  fleetBundle: { code: string } | { codePath: string },
): Promise<Worker[]> {
  // The presence activity and its pings only, on a queue of their own: a busy own queue must not make a live
  // worker look dead. It beats as soon as a call starts (the report must name a call before the worker can die
  // in it), so its heartbeat throttle is short.
  const { workerPresence, workerPing, failOverWorker, checkWorkerLost } = activities;
  const presenceWorker = await host.createWorker({
    taskQueue: presence.presenceQueue,
    activities: { workerPresence, workerPing },
    maxHeartbeatThrottleInterval: PRESENCE_THROTTLE,
    maxConcurrentActivityTaskExecutions: PRESENCE_SLOTS,
  });
  // The fleet's presence workflows and their fail-overs (a local activity), on a queue of their own with a
  // workflow thread of their own: a survivor saturated by runs still fails a dead worker over within ~3 s.
  const fleetWorker = await host.createWorker({
    taskQueue: fleetTaskQueue(host.taskQueue),
    workflowBundle: fleetBundle,
    activities: { failOverWorker, checkWorkerLost },
    // Local activities only: nothing is ever scheduled on the fleet queue as an activity.
    enableNonLocalActivities: false,
    maxConcurrentWorkflowTaskExecutions: PRESENCE_SLOTS,
    maxConcurrentLocalActivityExecutions: PRESENCE_SLOTS,
    workflowThreadPoolSize: 1,
    stickyQueueScheduleToStartTimeout: FAILOVER_STICKY_TIMEOUT,
  });
  return [presenceWorker, fleetWorker];
}
