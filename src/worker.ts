/** createAgentWorker: one Temporal worker that serves agent runs with the given tools. */
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { hostname } from "node:os";
import { fileURLToPath } from "node:url";
import { Client } from "@temporalio/client";
import {
  bundleWorkflowCode,
  NativeConnection,
  Worker,
  type InjectedSinks,
  type WorkerOptions,
} from "@temporalio/worker";
import { ContextCache, createActivities, type ContextCacheStats } from "./activities/index.js";
import type { AgentWorkerServeOptions } from "./serving.js";
import { metricsSink, noMetricsSink, type AgentMetrics } from "./telemetry/metrics.js";
import { workflowTracingModule, type AgentTracing } from "./telemetry/tracing.js";
import { McpToolSource } from "./mcp/source.js";
import {
  fleetSink,
  fleetTaskQueue,
  PRESENCE_SLOTS,
  PRESENCE_THROTTLE,
  presenceTimeoutMs,
  WorkerPresence,
} from "./failover/presence.js";
import { replayCap, replayCappedOptions } from "./failover/replay-slots.js";
import { DEFAULT_TASK_QUEUE, type AgentSinks } from "./workflows/definitions.js";

export { DEFAULT_TASK_QUEUE };

/**
 * How long a worker polls a dead worker's own queue after failing it over: runs that held their context there
 * send their next model call to it until one is answered elsewhere (a run waiting on a long tool or a person may
 * send it later, and waits out the call's schedule-to-start timeout instead).
 */
const ADOPT_MS = 15 * 60 * 1000;

/** How long a run's workflow task (or query) waits for the worker that holds it cached before any worker takes it. */
export const DEFAULT_STICKY_TIMEOUT = "1s";

export interface AgentWorkerOptions extends AgentWorkerServeOptions {
  /** Connection to Temporal; default: a new one to TEMPORAL_ADDRESS or localhost:7233 (closed when the worker stops). */
  connection?: NativeConnection;
  /** Temporal namespace; default "default". */
  namespace?: string;
  /** Task queue; default "jai-agent". */
  taskQueue?: string;
  /** A bundle from `bundleAgentWorkflows()` (or a file holding one), to skip bundling (seconds) when starting many workers. */
  workflowBundle?: { code: string } | { codePath: string };
  /**
   * OpenTelemetry traces (`createAgentTracing()` / `tracingFromEnv()`). With a
   * `workflowBundle`, bundle it with `bundleAgentWorkflows(path, { tracing: true })`.
   */
  tracing?: AgentTracing;
  /** Prometheus metrics of the runs this worker serves (`createAgentMetrics()`; the worker process serves them on /metrics). */
  metrics?: AgentMetrics;
}

/** Where the workflow sources are: `.ts` when running from source (tsx, jest), `.js` when built. */
export function agentWorkflowsPath(module = "index"): string {
  const js = fileURLToPath(new URL(`./workflows/${module}.js`, import.meta.url));
  return existsSync(js) ? js : js.replace(/\.js$/, ".ts");
}

// Workflow sources import "./x.js" as Node ESM wants; webpack must map that to "./x.ts" when bundling sources.
export const webpackConfigHook = (config: any) => {
  config.resolve = { ...config.resolve, extensionAlias: { ".js": [".ts", ".js"] } };
  return config;
};

/**
 * Bundles the agent workflows once; pass the result to several workers via
 * `workflowBundle`. `workflowsPath` bundles another workflows module instead
 * (e.g. a changed loop, to replay old histories against it before deploying).
 */
export async function bundleAgentWorkflows(
  workflowsPath = agentWorkflowsPath(),
  options: { tracing?: boolean } = {},
): Promise<{ code: string }> {
  // Tracing needs Temporal's workflow interceptors inside the bundle; without it the workflows carry nothing extra.
  const workflowInterceptorModules = options.tracing ? [workflowTracingModule()] : undefined;
  return bundleWorkflowCode({
    workflowsPath,
    webpackConfigHook,
    logger: quietLogger,
    ...(workflowInterceptorModules ? { workflowInterceptorModules } : {}),
  });
}

const quietLogger = { trace() {}, debug() {}, info() {}, warn: console.warn, error: console.error, log() {} } as any;

/** A running worker; `runUntil`/`run` as Temporal's Worker, closing the connection it opened itself. */
export interface AgentWorker {
  /** The Temporal worker underneath. */
  readonly worker: Worker;
  /** Task queue it polls. */
  readonly taskQueue: string;
  /** The queue only this worker polls (its runs' model calls), when routing is on. */
  readonly ownTaskQueue?: string;
  /** The worker polling `ownTaskQueue`. */
  readonly ownWorker?: Worker;
  /**
   * A client on the worker's own connection: runs it starts with `eagerStart: true`
   * get their first workflow task from the server in the start response.
   */
  readonly client: Client;
  /** The context cache's counters and sizes (hit rate, bytes, evictions, query bytes read). */
  cacheStats(): ContextCacheStats;
  /** Runs until `promise` settles, then shuts down; resolves or rejects with it. */
  runUntil<R>(promise: Promise<R> | (() => Promise<R>)): Promise<R>;
  /** Runs until `shutdown()` or a signal. */
  run(): Promise<void>;
  /** Starts a graceful shutdown. */
  shutdown(): void;
}

export async function createAgentWorker(options: AgentWorkerOptions = {}): Promise<AgentWorker> {
  const owned = options.connection === undefined;
  const connection =
    options.connection ??
    (await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS ?? "localhost:7233" }));
  const taskQueue = options.taskQueue ?? DEFAULT_TASK_QUEUE;
  const metrics = options.metrics;
  const onEvent = metrics ? metrics.wrapEvents(options.onEvent) : options.onEvent;
  const namespace = options.namespace ?? "default";
  const dataConverter = options.dataConverter ?? options.workerOptions?.dataConverter;
  // NativeConnection serves a Client too: activities use it to read a run's context on a cache miss
  // (with the worker's data converter: the query's answer is encoded like every other payload).
  const client = new Client({ connection, namespace, dataConverter });
  const contextCache = new ContextCache(() => client, {
    maxBytes: options.contextCacheBytes,
    maxRuns: options.contextCacheSize,
    onLookup: metrics?.contextCache,
  });
  // Unique per process start: a restarted worker has an empty cache, so it must not inherit the old queue's calls.
  const ownTaskQueue =
    options.routeModelCalls === false
      ? undefined
      : `${taskQueue}@${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;
  if (options.fastFailover && !ownTaskQueue)
    throw new TypeError(
      "fastFailover needs routeModelCalls: a worker without its own queue has nothing to watch it by",
    );
  const failover = ownTaskQueue && options.fastFailover ? options.fastFailover : undefined;
  const presence = failover
    ? new WorkerPresence(
        ownTaskQueue!,
        presenceTimeoutMs(failover === true ? undefined : failover.presenceTimeout),
        failover === true ? undefined : failover.links,
      )
    : undefined;
  const mcp = options.mcpServers?.length ? new McpToolSource(options.mcpServers) : undefined;
  const activities = createActivities({
    mcp,
    webhooks: options.webhooks,
    tools: options.tools ?? [],
    models: options.models,
    getApiKey: options.getApiKey,
    onEvent,
    client,
    contextCache,
    // Named only while its poller runs: a worker whose own queue stopped must not draw calls to it.
    ownTaskQueue: () => (ownWorker?.getState() === "RUNNING" ? ownTaskQueue : undefined),
    compactContext: options.compactContext,
    encrypted: (dataConverter?.payloadCodecs?.length ?? 0) > 0,
    presence,
  });
  const sinks: InjectedSinks<AgentSinks> = {
    agent: {
      emit: {
        fn: (info, event) => onEvent?.(event, { workflowId: info.workflowId, runId: info.runId }),
        callDuringReplay: false,
      },
    },
    metrics: metrics ? metricsSink(metrics) : noMetricsSink(),
    fleet: fleetSink(presence),
  };
  const tracing = options.tracing;
  if (tracing) (sinks as Record<string, unknown>).exporter = tracing.workflowExporter;
  const userInterceptors = options.workerOptions?.interceptors;
  const activity = [
    ...(tracing?.activityInterceptors ?? []),
    ...(userInterceptors?.activity ?? []),
    ...(metrics ? [metrics.activityInterceptor] : []),
    ...(presence ? [presence.activityInterceptor] : []),
  ];
  const workflowModules = [
    ...(userInterceptors?.workflowModules ?? []),
    ...(tracing && !options.workflowBundle ? [workflowTracingModule()] : []),
  ];
  const interceptors =
    tracing || metrics || presence
      ? { ...userInterceptors, activity, ...(workflowModules.length > 0 ? { workflowModules } : {}) }
      : userInterceptors;
  const replays = replayCap(options.maxConcurrentReplays, presence !== undefined, options.workerOptions);
  let worker: Worker;
  let ownWorker: Worker | undefined;
  let presenceWorker: Worker | undefined;
  let fleetWorker: Worker | undefined;
  // Workers made before a later one failed to be: shut down before the connection closes (it refuses while any holds it).
  const created: Worker[] = [];
  const made = (w: Worker) => (created.push(w), w);
  try {
    // The fleet queue's workflow code, before any worker exists (bundling is the step likeliest to fail): the
    // worker's own bundle, else only the presence workflow (the whole loop would cost seconds more to bundle).
    const fleetBundle = !presence
      ? undefined
      : (options.workflowBundle ??
        (await bundleWorkflowCode({
          workflowsPath: agentWorkflowsPath("presence"),
          webpackConfigHook,
          logger: quietLogger,
          payloadConverterPath: dataConverter?.payloadConverterPath,
          failureConverterPath: dataConverter?.failureConverterPath,
        })));
    worker = made(
      await Worker.create({
        connection,
        namespace,
        taskQueue,
        activities,
        ...(options.workflowBundle
          ? { workflowBundle: options.workflowBundle }
          : { workflowsPath: agentWorkflowsPath(), bundlerOptions: { webpackConfigHook } }),
        sinks,
        // Cancellation reaches an activity with a heartbeat's answer: keep that under ~1 s, not 80% of the heartbeat timeout.
        maxHeartbeatThrottleInterval: "1s",
        // A killed worker's sticky queue holds its runs' next workflow task, and the context query of the worker that
        // takes over its model call, until this timeout (Temporal's default: 10 s). At 1 s a run recovers within its
        // heartbeat timeout + ~3 s; the price is a full history replay elsewhere when a busy sticky worker misses 1 s.
        stickyQueueScheduleToStartTimeout: DEFAULT_STICKY_TIMEOUT,
        ...(replays === undefined ? options.workerOptions : replayCappedOptions(options.workerOptions ?? {}, replays)),
        ...(interceptors ? { interceptors } : {}),
        dataConverter,
      }),
    );
    if (ownTaskQueue) {
      // Activities only: the model calls of the runs whose context this worker holds.
      ownWorker = made(
        await Worker.create({
          connection,
          namespace,
          taskQueue: ownTaskQueue,
          activities,
          maxHeartbeatThrottleInterval: "1s",
          ...ownWorkerOptions(options.workerOptions),
          // The same payloads and activity interceptors (traces, metrics) as the shared worker; no workflows here.
          dataConverter,
          interceptors: { activity },
        }),
      );
    }
    if (presence) {
      // The presence activity and its pings only, on a queue of their own: a busy own queue must not make a
      // live worker look dead. It beats as soon as a call starts (the report must name a call before the worker
      // can die in it), so its heartbeat throttle is short.
      const { workerPresence, workerPing } = activities;
      presenceWorker = made(
        await Worker.create({
          connection,
          namespace,
          taskQueue: presence.presenceQueue,
          activities: { workerPresence, workerPing },
          maxHeartbeatThrottleInterval: PRESENCE_THROTTLE,
          maxConcurrentActivityTaskExecutions: PRESENCE_SLOTS,
          dataConverter,
        }),
      );
      // The fleet's presence workflows and their fail-overs (a local activity), on a queue of their own with a
      // workflow thread of their own: a survivor saturated by runs still fails a dead worker over within ~3 s.
      const { failOverWorker } = activities;
      fleetWorker = made(
        await Worker.create({
          connection,
          namespace,
          taskQueue: fleetTaskQueue(taskQueue),
          workflowBundle: fleetBundle!,
          activities: { failOverWorker },
          // Local activities only: nothing is ever scheduled on the fleet queue as an activity.
          enableNonLocalActivities: false,
          maxConcurrentWorkflowTaskExecutions: PRESENCE_SLOTS,
          maxConcurrentLocalActivityExecutions: PRESENCE_SLOTS,
          workflowThreadPoolSize: 1,
          stickyQueueScheduleToStartTimeout: DEFAULT_STICKY_TIMEOUT,
          // A bundle of the caller's may carry workflow interceptors that need the sinks (a tracing exporter).
          sinks,
          dataConverter,
        }),
      );
    }
  } catch (err) {
    // Each made worker runs for an instant and stops: only then does it let go of the connection.
    await Promise.allSettled(created.map((w) => w.runUntil(Promise.resolve())));
    await mcp?.close().catch(() => {});
    if (owned) await connection.close().catch(() => {});
    throw err;
  }
  // What the server will say started a call of this worker's (shared queue, own queue): the fleet fails such calls
  // when this worker dies, also those handed to its last polls that no report of its named.
  if (presence)
    presence.identities = [...new Set([worker.options.identity, ownWorker?.options.identity])].filter(
      (id): id is string => typeof id === "string" && id.length > 0,
    );
  // Dead workers' own queues this one polls for a while (fast failover), without the presence activity (the
  // queue's worker, alive after all, runs that).
  const adopted = new Map<Worker, Promise<void>>();
  presence?.onAdopt(async (queue) => {
    const { workerPresence: _presence, workerPing: _ping, ...served } = activities;
    const adopter = await Worker.create({
      connection,
      namespace,
      taskQueue: queue,
      activities: served,
      maxHeartbeatThrottleInterval: "1s",
      ...ownWorkerOptions(options.workerOptions),
      dataConverter,
      interceptors: { activity },
    });
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
  const stopAll = () => {
    presence?.unwatch();
    for (const w of [ownWorker, presenceWorker, fleetWorker, ...adopted.keys()])
      if (w?.getState() === "RUNNING") w.shutdown();
  };
  const closeOwned = async () => {
    await mcp?.close();
    if (owned) await connection.close();
  };
  const own = ownWorker;
  const presenceOwn = presenceWorker;
  const fleet = fleetWorker;
  // A worker draining in-flight calls (a shutdown grace time) is leaving: its presence ends at once.
  if (presence && own) presence.stopping = () => own.getState() !== "RUNNING" || worker.getState() !== "RUNNING";
  // Both pollers live and stop together; the own queue's calls fall back to the shared one when it is gone.
  const runBoth = async <R>(main: Promise<R>): Promise<R> => {
    if (!own) return main;
    // Handled at once: a poller that fails while `main` is awaited must not be an unhandled rejection.
    const ended = (what: string) => (err: unknown) => console.warn(`jai: ${what} worker ended: ${String(err)}`);
    const ownRunning = own.run().catch(ended("own-queue"));
    const presenceRunning = presenceOwn?.run().catch(ended("presence"));
    const fleetRunning = fleet?.run().catch(ended("fleet-queue"));
    // Watched from now on (a worker that cannot start its presence still serves, and fails over the slow way).
    if (presence) presence.watch(client, taskQueue);
    try {
      return await main;
    } finally {
      stopAll();
      await Promise.all([ownRunning, presenceRunning, fleetRunning, ...adopted.values()]);
      // Stopped and drained, its presence ended: now its peers may see its links close.
      await presence?.leave();
    }
  };
  return {
    worker,
    taskQueue,
    client,
    ...(own ? { ownTaskQueue, ownWorker: own } : {}),
    cacheStats: () => contextCache.stats,
    async runUntil(promise) {
      try {
        return await runBoth(worker.runUntil(promise));
      } finally {
        await closeOwned();
      }
    },
    async run() {
      try {
        await runBoth(worker.run());
      } finally {
        await closeOwned();
      }
    },
    shutdown: () => {
      worker.shutdown();
      stopAll();
    },
  };
}

/** The shared worker's options that also apply to the own-queue worker (activity limits, interceptors, data converter, ...). */
function ownWorkerOptions(options: Partial<WorkerOptions> | undefined): Partial<WorkerOptions> {
  if (!options) return {};
  const {
    taskQueue: _taskQueue,
    workflowsPath: _workflowsPath,
    workflowBundle: _workflowBundle,
    bundlerOptions: _bundlerOptions,
    maxConcurrentWorkflowTaskExecutions: _wft,
    maxCachedWorkflows: _cached,
    stickyQueueScheduleToStartTimeout: _sticky,
    ...rest
  } = options as Partial<WorkerOptions> & Record<string, unknown>;
  return rest as Partial<WorkerOptions>;
}
