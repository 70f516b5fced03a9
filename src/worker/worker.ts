/** createAgentWorker: one Temporal worker that serves agent runs with the given tools. */
import { randomUUID } from "node:crypto";
import { existsSync } from "node:fs";
import { hostname } from "node:os";
import { fileURLToPath } from "node:url";
import { Client } from "@temporalio/client";
import type { DataConverter } from "@temporalio/common";
import {
  bundleWorkflowCode,
  DefaultLogger,
  NativeConnection,
  Runtime,
  Worker,
  type ActivityInterceptorsFactory,
  type InjectedSinks,
  type LogLevel,
  type LogMetadata,
  type WorkerDeploymentOptions,
  type WorkerInterceptors,
  type WorkerOptions,
} from "@temporalio/worker";
import { checkProviderLimits, ContextCache, createActivities, type ContextCacheStats } from "./activities/index.js";
import type { AgentWorkerServeOptions } from "./serving.js";
import { metricsSink, noMetricsSink, type AgentMetrics } from "./telemetry/metrics.js";
import { providerLimitMetrics } from "./telemetry/provider-limit-metrics.js";
import type { AgentTracing } from "./telemetry/tracing.js";
import { workflowTracingModule } from "./telemetry/tracing-module.js";
import { loadOptional, MCP_PACKAGES } from "../node/optional-package.js";
import type { McpToolSource } from "./mcp/source.js";
import { replayCappedOptions } from "./replay-cap.js";
import {
  bundleEncryptsFailures,
  encryptsFailures,
  ENCRYPTED_FAILURES_PATH,
  refusePlainFailures,
  withEncryptedFailures,
} from "../node/codec/config.js";
import { storedResultBytes } from "../node/blobs/config.js";
import { DEFAULT_TASK_QUEUE, type AgentSinks } from "../shared/definitions.js";
import type { AgentEventSink } from "../shared/contracts.js";
import type { RunEventsEndpoint, RunEventsService } from "./events/serve.js";
import { workflowEventId } from "../node/event-identity.js";

export { DEFAULT_TASK_QUEUE };

/**
 * How long a run's workflow task (or query) waits for the worker that holds it cached before any worker takes it:
 * Temporal's default. A shorter one costs a saturated worker its tail (#44): a task that waits past it in a busy
 * worker's sticky queue goes to the shared queue, where Temporal's Core polls little while its sticky queue has a
 * backlog, and waited 37-50 s there (p99 turn 37-52 s against 7 s at 200 runs on one worker, docs/benchmarks.md).
 * A shorter one also frees a SIGKILLed worker's runs sooner: `workerOptions.stickyQueueScheduleToStartTimeout`
 * sets it (docs/crashes-and-upgrades.md, "A killed worker's calls").
 */
export const DEFAULT_STICKY_TIMEOUT = "10s";

export interface AgentWorkerOptions extends AgentWorkerServeOptions {
  /** Connection to Temporal; default: a new one to TEMPORAL_ADDRESS or localhost:7233 (closed when the worker stops). */
  connection?: NativeConnection;
  /** Temporal namespace; default "default". */
  namespace?: string;
  /** Task queue; default "jai-agent". */
  taskQueue?: string;
  /**
   * A bundle from `bundleAgentWorkflows()` (or a file holding one), to skip bundling (seconds) when starting many
   * workers. Under a payload codec, bundle it with `bundleAgentWorkflows(path, { encryptFailures: true })`.
   */
  workflowBundle?: { code: string } | { codePath: string };
  /**
   * OpenTelemetry traces (`createAgentTracing()` / `tracingFromEnv()`). With a
   * `workflowBundle`, bundle it with `bundleAgentWorkflows(path, { tracing: true })`.
   */
  tracing?: AgentTracing;
  /** Prometheus metrics of the runs this worker serves (`createAgentMetrics()`; the worker process serves them on /metrics). */
  metrics?: AgentMetrics;
  /**
   * Serve as this version of a Worker Deployment (Temporal's Worker Deployment Versioning): a run is pinned to the
   * version it started on and completes there; a session or another continue-as-new chain moves to the deployment's
   * current version at its next continue-as-new (Temporal server 1.30 or later). None: an unversioned worker, as
   * before (open runs replay on whatever code the workers have; patches keep them safe). docs/crashes-and-upgrades.md,
   * "Deploying a change".
   */
  deployment?: AgentWorkerDeployment;
}

/** A Worker Deployment Version: the service's deployment name and this build's id. */
export interface AgentWorkerDeployment {
  /** The Worker Deployment: one name per service (e.g. "jai-agent"), the same for every build; no "." or ":". */
  name: string;
  /** This build (an image tag, a git SHA): a new id for every build whose workflow code differs. */
  buildId: string;
}

/**
 * The Temporal worker options of a deployment version: runs pinned by default (the loop is written for it: a run
 * never replays on another build's code; continue-as-new moves a chain on, see workflows/continue-as-new.ts). A name
 * or build id the server would refuse is a TypeError here, before the worker polls.
 */
export function agentDeploymentOptions(deployment: AgentWorkerDeployment): WorkerDeploymentOptions {
  const { name, buildId } = deployment;
  if (typeof name !== "string" || name.trim() === "" || /[.:]/.test(name))
    throw new TypeError(`deployment name must be a non-empty string without "." or ":", got ${JSON.stringify(name)}`);
  if (typeof buildId !== "string" || buildId.trim() === "")
    throw new TypeError(`deployment build id must be a non-empty string, got ${JSON.stringify(buildId)}`);
  return {
    version: { deploymentName: name, buildId },
    useWorkerVersioning: true,
    defaultVersioningBehavior: "PINNED",
  };
}

const LOG_LEVELS: readonly LogLevel[] = ["TRACE", "DEBUG", "INFO", "WARN", "ERROR"];

/** Temporal's log level for the agent's workers: JAI_LOG_LEVEL, default WARN; another value is a TypeError naming it. */
export function agentLogLevel(env: NodeJS.ProcessEnv = process.env): LogLevel {
  const level = (env.JAI_LOG_LEVEL || "WARN").toUpperCase() as LogLevel;
  if (!LOG_LEVELS.includes(level))
    throw new TypeError(`JAI_LOG_LEVEL must be one of ${LOG_LEVELS.join(", ")}, got "${env.JAI_LOG_LEVEL}"`);
  return level;
}

/**
 * Temporal's logger as the agent wants it: at `level`, without the notice each activity-only worker (a worker's
 * own queue, which polls model calls and no workflows by design) logs at start, which reads like a fault.
 */
export class AgentRuntimeLogger extends DefaultLogger {
  override log(level: LogLevel, message: string, meta?: LogMetadata): void {
    if (message.startsWith("No workflows registered")) return;
    super.log(level, message, meta);
  }
}

/**
 * Quiet by default: unless the process installs Temporal's Runtime itself, the one Temporal creates on first use
 * (the first `NativeConnection.connect`, usually before `createAgentWorker` runs) logs at JAI_LOG_LEVEL (WARN),
 * not INFO, so a worker does not print the bundler's stats and every worker state change.
 */
function quietDefaultRuntime(): void {
  if (Runtime._instance !== undefined || Runtime.defaultOptions.logger !== undefined) return;
  Runtime.defaultOptions = { ...Runtime.defaultOptions, logger: new AgentRuntimeLogger(agentLogLevel()) };
}
try {
  quietDefaultRuntime();
} catch {
  // A bad JAI_LOG_LEVEL: createAgentWorker reports it.
}

/** The workflow bundle shipped next to the built code (`npm pack` makes it: `jai-agent bundle`), if present. */
export function shippedWorkflowBundle(): string | undefined {
  const file = fileURLToPath(new URL("../workflow-bundle.js", import.meta.url));
  return existsSync(file) ? file : undefined;
}

/**
 * The shipped bundle, when it holds what this worker's workflows need: no tracing interceptors, no workflow
 * modules or bundler options of the caller's, and the same failure converter. Else undefined: bundle at start.
 */
function usableShippedBundle(options: AgentWorkerOptions, dataConverter: DataConverter | undefined) {
  const user = options.workerOptions;
  if (options.tracing || user?.workflowsPath || user?.workflowBundle || user?.bundlerOptions) return undefined;
  if (user?.interceptors?.workflowModules?.length || dataConverter?.payloadConverterPath) return undefined;
  const failures = dataConverter?.failureConverterPath;
  if (failures !== undefined && failures !== ENCRYPTED_FAILURES_PATH) return undefined;
  const file = shippedWorkflowBundle();
  return file && bundleEncryptsFailures({ codePath: file }) === encryptsFailures(dataConverter)
    ? { codePath: file }
    : undefined;
}

/** Where the workflow sources are: `.ts` when running from source (tsx, jest), `.js` when built. */
export function agentWorkflowsPath(module = "index"): string {
  const js = fileURLToPath(new URL(`../workflows/${module}.js`, import.meta.url));
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
  options: {
    tracing?: boolean;
    /** For workers with a payload codec: the failures the workflows write go through it (see `withEncryptedFailures`). */
    encryptFailures?: boolean;
  } = {},
): Promise<{ code: string }> {
  // Tracing needs Temporal's workflow interceptors inside the bundle; without it the workflows carry nothing extra.
  const workflowInterceptorModules = options.tracing ? [workflowTracingModule()] : undefined;
  return bundleWorkflowCode({
    workflowsPath,
    webpackConfigHook,
    logger: quietLogger,
    ...(workflowInterceptorModules ? { workflowInterceptorModules } : {}),
    ...(options.encryptFailures ? { failureConverterPath: ENCRYPTED_FAILURES_PATH } : {}),
  });
}

export const quietLogger = {
  trace() {},
  debug() {},
  info() {},
  warn: console.warn,
  error: console.error,
  log() {},
} as any;

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
  /**
   * Where this worker serves its runs' live events and the run API (the `events` option; undefined when off).
   * `handle.events({ url, token })` reads it from anywhere that reaches `url`.
   */
  readonly events?: RunEventsEndpoint;
  /** The context cache's counters and sizes (hit rate, bytes, evictions, query bytes read). */
  cacheStats(): ContextCacheStats;
  /** Runs until `promise` settles, then shuts down; resolves or rejects with it. */
  runUntil<R>(promise: Promise<R> | (() => Promise<R>)): Promise<R>;
  /** Runs until `shutdown()` or a signal. */
  run(): Promise<void>;
  /** Starts a graceful shutdown. */
  shutdown(): void;
}

/** What every step below shares: the connection, the queues, the client, the cache and the event sink. */
interface Agent {
  options: AgentWorkerOptions;
  connection: NativeConnection;
  /** The connection was opened here (closed when the worker stops). */
  owned: boolean;
  namespace: string;
  taskQueue: string;
  ownTaskQueue?: string;
  dataConverter?: DataConverter;
  /** The caller's bundle, else the shipped one when it fits; none: the workflows are bundled at start. */
  workflowBundle?: { code: string } | { codePath: string };
  client: Client;
  contextCache: ContextCache;
  onEvent?: AgentEventSink;
  /** The live events server (the `events` option), and the identity that announces it to clients. */
  events?: RunEventsService;
  identity?: string;
  mcp?: McpToolSource;
  /** Temporal workers created so far: shut down if a later step fails (the connection refuses to close before). */
  made: Worker[];
  /** The shared queue's worker's deployment version (the `deployment` option); none: unversioned. */
  deployment?: WorkerDeploymentOptions;
}

/** The agent's Temporal workers, once created; read by the activities (routing, identity) before they exist. */
type Pollers = { worker?: Worker; ownWorker?: Worker };

/** What the shared and own-queue workers register: activities and activity interceptors. */
interface ActivitySpec {
  activities: ReturnType<typeof createActivities>;
  activity: ActivityInterceptorsFactory[];
}

/**
 * A worker serving agent runs, in named steps: the connection and queues (1), the live events server (2), the
 * agent's activities (3), the workflows' sinks (4) and interceptors (5), the shared queue's worker (6), the own
 * queue's (7), then both run and stop together (8): one Temporal worker, plus the own-queue worker while model calls
 * are routed.
 */
export async function createAgentWorker(options: AgentWorkerOptions = {}): Promise<AgentWorker> {
  const agent = await connectAgent(options);
  const pollers: Pollers = {};
  try {
    await serveAgentEvents(agent);
    const interceptors = agentInterceptors(options);
    const spec: ActivitySpec = { activities: agentActivities(agent, pollers), activity: interceptors.activity };
    const worker = await createSharedWorker(agent, spec, interceptors.worker);
    pollers.worker = worker;
    if (agent.ownTaskQueue) pollers.ownWorker = await createActivityWorker(agent, spec, agent.ownTaskQueue);
    return runningAgent(agent, { worker, ownWorker: pollers.ownWorker });
  } catch (err) {
    await closeAgent(agent, true);
    throw err;
  }
}

/** Step 1: the connection, the queues, the data converter, the client and the context cache. */
async function connectAgent(options: AgentWorkerOptions): Promise<Agent> {
  agentLogLevel(); // a bad JAI_LOG_LEVEL is refused before anything is opened
  if (options.providerLimits !== undefined) checkProviderLimits(options.providerLimits); // so is a bad limit
  quietDefaultRuntime();
  const dataConverter = checkedDataConverter(options);
  const deployment = checkedDeployment(options); // refused before anything is opened
  const workflowBundle = options.workflowBundle ?? usableShippedBundle(options, dataConverter);
  const owned = options.connection === undefined;
  const connection =
    options.connection ??
    (await NativeConnection.connect({ address: process.env.TEMPORAL_ADDRESS ?? "localhost:7233" }));
  const namespace = options.namespace ?? "default";
  const taskQueue = options.taskQueue ?? DEFAULT_TASK_QUEUE;
  const metrics = options.metrics;
  // Metrics label models by this worker's list (and the catalogue): a model a run made up counts as "other".
  metrics?.addModels(options.models ?? []);
  // NativeConnection serves a Client too: activities use it to read a run's context on a cache miss
  // (with the worker's data converter: the query's answer is encoded like every other payload).
  const client = new Client({ connection, namespace, dataConverter });
  const contextCache = new ContextCache(() => client, {
    maxBytes: options.contextCacheBytes,
    maxRuns: options.contextCacheSize,
    onLookup: metrics?.contextCache,
  });
  // Unique per process start: a restarted worker has an empty cache, so it must not inherit the old queue's calls.
  const ownTaskQueue = options.routeModelCalls === false ? undefined : `${taskQueue}@${workerName()}`;
  const onEvent = metrics ? metrics.wrapEvents(options.onEvent) : options.onEvent;
  // The MCP client (and its schema libraries) is loaded only by a worker that has MCP servers.
  const mcp = options.mcpServers?.length
    ? new (
        await loadOptional("mcpServers (MCP tool sources)", MCP_PACKAGES, () => import("./mcp/source.js"))
      ).McpToolSource(options.mcpServers)
    : undefined;
  return {
    options,
    connection,
    owned,
    namespace,
    taskQueue,
    ownTaskQueue,
    dataConverter,
    workflowBundle,
    client,
    contextCache,
    onEvent,
    mcp,
    made: [],
    ...(deployment ? { deployment } : {}),
  };
}

/** The deployment version's worker options; the option and `workerOptions.workerDeploymentOptions` are one or the other. */
function checkedDeployment(options: AgentWorkerOptions): WorkerDeploymentOptions | undefined {
  if (options.deployment === undefined) return undefined;
  if (options.workerOptions?.workerDeploymentOptions !== undefined)
    throw new TypeError(
      "give the deployment either as `deployment` or as `workerOptions.workerDeploymentOptions`, not both",
    );
  return agentDeploymentOptions(options.deployment);
}

/** The worker's data converter; under a codec, failure messages and stack traces go through it too. */
function checkedDataConverter(options: AgentWorkerOptions): DataConverter | undefined {
  // The workflows write their failures from the bundle: it must encrypt them too.
  const dataConverter = withEncryptedFailures(options.dataConverter ?? options.workerOptions?.dataConverter);
  refusePlainFailures(options.workflowBundle, dataConverter, "this worker");
  return dataConverter;
}

/**
 * Step 2: the live events server, unless off: every event passes through its tap, and the workers' identity names
 * it (history records that identity on every task, which is where `handle.events()` finds the server).
 */
async function serveAgentEvents(agent: Agent): Promise<void> {
  const { options } = agent;
  if (options.events === false) return;
  const { serveWorkerEvents } = await import("./events/serve.js"); // the HTTP server is loaded only when used
  agent.events = await serveWorkerEvents(options.events, {
    client: agent.client,
    taskQueue: agent.taskQueue,
    namespace: agent.namespace,
    identity: options.workerOptions?.identity,
    onEvent: agent.onEvent,
    models: (options.models ?? []).map((m) => `${m.provider}/${m.id}`),
  });
  if (!agent.events) return;
  agent.onEvent = agent.events.onEvent;
  agent.identity = agent.events.identity;
}

const workerName = () => `${hostname()}-${process.pid}-${randomUUID().slice(0, 8)}`;

/** Step 3: the agent's activities, bound to this worker's tools, models, keys, cache and queues. */
function agentActivities(agent: Agent, pollers: Pollers): ReturnType<typeof createActivities> {
  const { options, ownTaskQueue, dataConverter } = agent;
  return createActivities({
    mcp: agent.mcp,
    webhooks: options.webhooks,
    tools: options.tools ?? [],
    models: options.models,
    allowedModelBaseUrls: options.allowedModelBaseUrls,
    getApiKey: options.getApiKey,
    onEvent: agent.onEvent,
    client: agent.client,
    contextCache: agent.contextCache,
    // Named only while its poller runs: a worker whose own queue stopped must not draw calls to it.
    ownTaskQueue: () => (pollers.ownWorker?.getState() === "RUNNING" ? ownTaskQueue : undefined),
    // Named in routed replies: the run's next call waits for this worker as long as its next workflow task does.
    stickyTimeoutMs: () => {
      const compiled = pollers.worker?.options;
      return compiled && compiled.maxCachedWorkflows > 0 ? compiled.stickyQueueScheduleToStartTimeoutMs : undefined;
    },
    // Named in failures that say which worker lacks a run's model or key.
    workerIdentity: () => pollers.worker?.options.identity,
    compactContext: options.compactContext,
    encrypted: (dataConverter?.payloadCodecs?.length ?? 0) > 0,
    storedResultBytes: storedResultBytes(dataConverter),
    providerLimits: options.providerLimits,
    providerLimitHooks: options.metrics && providerLimitMetrics(options.metrics.registry),
  });
}

/** The `agent` sink: each workflow event to `onEvent` with its identity (not again on replay). */
export function agentEventSink(onEvent: AgentEventSink | undefined): InjectedSinks<AgentSinks>["agent"] {
  return {
    emit: {
      fn: (info, event, seq) =>
        onEvent?.(event, {
          workflowId: info.workflowId,
          runId: info.runId,
          eventId: workflowEventId(info.runId, seq, event),
        }),
      callDuringReplay: false,
    },
  };
}

/** Step 4: the sinks the workflows write to: events, metrics and tracing's exporter. */
function agentSinks(agent: Agent): InjectedSinks<AgentSinks> {
  const { onEvent, options } = agent;
  const sinks: InjectedSinks<AgentSinks> = {
    agent: agentEventSink(onEvent),
    metrics: options.metrics ? metricsSink(options.metrics) : noMetricsSink(),
  };
  if (options.tracing) (sinks as Record<string, unknown>).exporter = options.tracing.workflowExporter;
  return sinks;
}

/** Step 5: the interceptors: the caller's, tracing's and metrics' (activity ones on both pollers). */
function agentInterceptors(options: AgentWorkerOptions): {
  worker?: WorkerInterceptors;
  activity: ActivityInterceptorsFactory[];
} {
  const { tracing, metrics } = options;
  const user = options.workerOptions?.interceptors;
  const activity = [
    ...(tracing?.activityInterceptors ?? []),
    ...(user?.activity ?? []),
    ...(metrics ? [metrics.activityInterceptor] : []),
  ];
  const workflowModules = [
    ...(user?.workflowModules ?? []),
    ...(tracing && !options.workflowBundle ? [workflowTracingModule()] : []),
  ];
  const changed =
    activity.length > (user?.activity?.length ?? 0) || workflowModules.length > (user?.workflowModules?.length ?? 0);
  const worker = changed ? { ...user, activity, ...(workflowModules.length > 0 ? { workflowModules } : {}) } : user;
  return { worker, activity };
}

/** Step 6: the worker of the shared queue: the workflows (bundled unless given) and every activity. */
async function createSharedWorker(
  agent: Agent,
  spec: ActivitySpec,
  interceptors: WorkerInterceptors | undefined,
): Promise<Worker> {
  const { options, connection, namespace, taskQueue, dataConverter } = agent;
  const replays = options.maxConcurrentReplays;
  const worker = await Worker.create({
    connection,
    namespace,
    taskQueue,
    activities: spec.activities,
    ...(agent.workflowBundle
      ? { workflowBundle: agent.workflowBundle }
      : { workflowsPath: agentWorkflowsPath(), bundlerOptions: { webpackConfigHook } }),
    sinks: agentSinks(agent),
    // Cancellation reaches an activity with a heartbeat's answer: keep that under ~1 s, not 80% of the heartbeat timeout.
    maxHeartbeatThrottleInterval: "1s",
    // A killed worker's sticky queue holds its runs' next workflow task, and the context query of the worker that
    // takes over its model call, until this timeout; a busy worker's runs must not lose their place by it (see
    // DEFAULT_STICKY_TIMEOUT); the caller's options win.
    stickyQueueScheduleToStartTimeout: DEFAULT_STICKY_TIMEOUT,
    ...(replays === undefined ? options.workerOptions : replayCappedOptions(options.workerOptions ?? {}, replays)),
    ...(agent.deployment ? { workerDeploymentOptions: agent.deployment } : {}),
    ...(agent.identity ? { identity: agent.identity } : {}),
    ...(interceptors ? { interceptors } : {}),
    dataConverter,
  });
  agent.made.push(worker);
  return worker;
}

/**
 * Step 7: a worker of activities only on `taskQueue`, the own queue: the model calls of the runs whose context this
 * worker holds. The same payloads and activity interceptors as the shared one.
 */
async function createActivityWorker(agent: Agent, spec: ActivitySpec, taskQueue: string): Promise<Worker> {
  const worker = await Worker.create({
    connection: agent.connection,
    namespace: agent.namespace,
    taskQueue,
    activities: spec.activities,
    maxHeartbeatThrottleInterval: "1s",
    ...ownWorkerOptions(agent.options.workerOptions),
    ...(agent.identity ? { identity: agent.identity } : {}),
    dataConverter: agent.dataConverter,
    interceptors: { activity: spec.activity },
  });
  agent.made.push(worker);
  return worker;
}

/** Shuts down what was made and closes what was opened here; `failed`: the workers made never ran. */
async function closeAgent(agent: Agent, failed: boolean): Promise<void> {
  // Each made worker runs for an instant and stops: only then does it let go of the connection.
  if (failed) await Promise.allSettled(agent.made.map((w) => w.runUntil(Promise.resolve())));
  const closing = (close: Promise<void> | undefined) => (failed ? close?.catch(() => {}) : close);
  await closing(agent.events?.server.close());
  await closing(agent.mcp?.close());
  if (agent.owned) await closing(agent.connection.close());
}

/** Step 8: the pollers live and stop together; the own queue's calls fall back to the shared one when it is gone. */
function runningAgent(agent: Agent, pollers: { worker: Worker; ownWorker?: Worker }): AgentWorker {
  const { worker, ownWorker } = pollers;
  const stopOwn = () => {
    if (ownWorker?.getState() === "RUNNING") ownWorker.shutdown();
  };
  const runAll = <R>(main: Promise<R>) => runTogether(agent, main, ownWorker, stopOwn);
  return {
    worker,
    taskQueue: agent.taskQueue,
    client: agent.client,
    ...(agent.events ? { events: endpoint(agent.events) } : {}),
    ...(ownWorker ? { ownTaskQueue: agent.ownTaskQueue, ownWorker } : {}),
    cacheStats: () => agent.contextCache.stats,
    runUntil: (promise) => runAll(worker.runUntil(promise)),
    run: () => runAll(worker.run()),
    shutdown: () => {
      worker.shutdown();
      stopOwn();
    },
  };
}

/** What the worker's owner may see of its events server. */
const endpoint = ({ server }: RunEventsService): RunEventsEndpoint => ({
  url: server.url,
  token: server.token,
  tokenMinted: server.tokenMinted,
  consoleUrl: server.consoleUrl,
});

/** Runs the own-queue worker while `main` (the shared worker) runs; then stops and drains it. */
async function runTogether<R>(
  agent: Agent,
  main: Promise<R>,
  ownWorker: Worker | undefined,
  stopOwn: () => void,
): Promise<R> {
  try {
    // Handled at once: a poller that fails while `main` is awaited must not be an unhandled rejection.
    const running = ownWorker
      ?.run()
      .catch((err) => console.warn(`jai: worker of ${ownWorker.options.taskQueue} ended: ${String(err)}`));
    try {
      return await main;
    } finally {
      stopOwn();
      await running;
    }
  } finally {
    await closeAgent(agent, false);
  }
}

/**
 * The shared worker's options that also apply to the own-queue worker (activity limits, interceptors, data converter,
 * ...). Not its deployment version: the own queue is this process's alone, so its calls reach this build anyway, and
 * a versioned poller registers its queue in the version, one more per process start, against the server's caps
 * (`matching.maxTaskQueuesInDeploymentVersion`, 100, and `matching.maxTaskQueuesInDeployment`, 1000). Unversioned,
 * a pinned run's call there is one the server sends to the queue's own (unversioned) pollers.
 */
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
    workerDeploymentOptions: _deployment,
    ...rest
  } = options as Partial<WorkerOptions> & Record<string, unknown>;
  return rest as Partial<WorkerOptions>;
}
