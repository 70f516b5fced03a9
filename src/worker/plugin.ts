/**
 * AgentPlugin: agent runs on a worker (and client) a team already has, next to
 * its other Temporal plugins: `Worker.create({ ..., plugins: [new AgentPlugin({ tools })] })`.
 */
import { hostname } from "node:os";
import {
  Client,
  type ClientOptions,
  type ClientPlugin,
  type ConnectionOptions,
  type ConnectionPlugin,
} from "@temporalio/client";
import { SimplePlugin } from "@temporalio/plugin";
import type {
  BundleOptions,
  BundlerPlugin,
  InjectedSinks,
  NativeConnectionOptions,
  NativeConnectionPlugin,
  ReplayWorkerOptions,
  Worker,
  WorkerOptions,
  WorkerPlugin,
} from "@temporalio/worker";
import { createActivities } from "./activities/index.js";
import type { AgentServeOptions } from "./serving.js";
import { agentEventSink, agentWorkflowsPath, webpackConfigHook } from "./worker.js";
import type { AgentSinks } from "../shared/definitions.js";
import { noMetricsSink } from "./telemetry/metrics.js";
import { refusePlainFailures, withEncryptedFailures } from "../node/codec/config.js";
import { storedResultBytes } from "../node/blobs/config.js";
import type { RunEventsService } from "./events/serve.js";

/**
 * What the plugin serves (see `AgentServeOptions`). A plugin worker has no own
 * queue: model calls stay on the shared one.
 */
export type AgentPluginOptions = AgentServeOptions;

/**
 * Adds the agent's activities, its event sink and (when the worker has no
 * workflows of its own) its workflows to a worker. A worker that has its own
 * `workflowsPath` keeps it: that module must `export * from "jai-agent/workflows"`
 * so one worker serves both. On a worker, client or replayer with a payload
 * codec it encrypts failure messages and stack traces too; otherwise a client
 * is left as it is (`startAgentRun` works with any client).
 *
 * Unless `events: false`, each worker it configures serves its runs' live
 * events like `createAgentWorker` does (a run server on loopback, announced in
 * the worker's identity), from `Worker.create` until the worker stops.
 */
export class AgentPlugin
  implements WorkerPlugin, ClientPlugin, BundlerPlugin, ConnectionPlugin, NativeConnectionPlugin
{
  readonly name = "jai-agent.AgentPlugin";
  // SimplePlugin's merging rules for everything but the worker; not extended, as configuring a worker is async here
  // (it starts the events server, whose address goes into the worker's identity).
  private readonly simple = new SimplePlugin({
    name: this.name,
    // Under a codec, failure messages and stack traces go through it too (a provider's error can quote the request).
    dataConverter: (dc) => withEncryptedFailures(dc ?? {}),
  });
  /** The events servers of the workers configured here, by identity: each closes when its worker stops. */
  private readonly served = new Map<string, RunEventsService>();

  constructor(private readonly agent: AgentPluginOptions = {}) {}

  async configureWorker(options: WorkerOptions): Promise<WorkerOptions> {
    const base = this.simple.configureWorker(options);
    if (!base.connection)
      throw new TypeError("AgentPlugin needs the worker's `connection` option (a NativeConnection)");
    refusePlainFailures(base.workflowBundle, base.dataConverter, "AgentPlugin: the worker");
    // NativeConnection serves a Client too: activities read a run's context through it on a cache miss.
    // With the worker's data converter: under a codec the context query's answer is encoded too.
    const client = new Client({
      connection: base.connection,
      namespace: base.namespace ?? "default",
      dataConverter: base.dataConverter,
    });
    // The sink is bound once the events server is up: the checks below come first, so a refused worker opens nothing.
    let onEvent = this.agent.onEvent;
    const activities = createActivities({
      ...this.agent,
      tools: this.agent.tools ?? [],
      client,
      onEvent: (event, run) => onEvent?.(event, run),
      storedResultBytes: storedResultBytes(base.dataConverter),
    });
    const clash = Object.keys(activities).find((name) => name in ((base.activities as object | undefined) ?? {}));
    if (clash) throw new TypeError(`AgentPlugin: the worker already has an activity named "${clash}"`);
    const events = await this.serveEvents(base, client);
    // Every event, the model activity's token deltas included, passes through the events server's tap.
    if (events) onEvent = events.onEvent;
    const sinks: InjectedSinks<AgentSinks> = { agent: agentEventSink(onEvent), metrics: noMetricsSink() };
    const ownWorkflows = base.workflowsPath !== undefined || base.workflowBundle !== undefined;
    return {
      ...base,
      activities: { ...(base.activities as object | undefined), ...activities },
      sinks: { ...base.sinks, ...sinks },
      ...(ownWorkflows ? {} : { workflowsPath: agentWorkflowsPath() }),
      // Cancellation reaches an activity with a heartbeat's answer: keep that under ~1 s.
      maxHeartbeatThrottleInterval: base.maxHeartbeatThrottleInterval ?? "1s",
      ...(events ? { identity: events.identity } : {}),
    };
  }

  /** The worker's events server, unless off or the worker already announces one of its own. */
  private async serveEvents(base: WorkerOptions, client: Client): Promise<RunEventsService | undefined> {
    if (this.agent.events === false) return undefined;
    const { serveWorkerEvents } = await import("./events/serve.js"); // the HTTP server is loaded only when used
    const events = await serveWorkerEvents(this.agent.events, {
      client,
      taskQueue: base.taskQueue,
      namespace: base.namespace ?? "default",
      // Temporal's default identity, which the worker would otherwise compute itself.
      identity: base.identity ?? `${process.pid}@${hostname()}`,
      onEvent: this.agent.onEvent,
    });
    if (events) this.served.set(events.identity, events);
    return events;
  }

  async runWorker(worker: Worker, next: (w: Worker) => Promise<void>): Promise<void> {
    try {
      await this.simple.runWorker(worker, next);
    } finally {
      const events = this.served.get(worker.options.identity);
      this.served.delete(worker.options.identity);
      await events?.server.close();
    }
  }

  configureClient(options: ClientOptions): ClientOptions {
    return this.simple.configureClient(options);
  }

  configureReplayWorker(options: ReplayWorkerOptions): ReplayWorkerOptions {
    return this.simple.configureReplayWorker(options);
  }

  configureConnection(options: ConnectionOptions): ConnectionOptions {
    return this.simple.configureConnection(options);
  }

  configureNativeConnection(options: NativeConnectionOptions): NativeConnectionOptions {
    return this.simple.configureNativeConnection(options);
  }

  configureBundler(options: BundleOptions): BundleOptions {
    const base = this.simple.configureBundler(options);
    const theirs = base.webpackConfigHook;
    // Running from TypeScript sources, "./x.js" imports must resolve to "./x.ts"; harmless for built code.
    return { ...base, webpackConfigHook: (config) => webpackConfigHook(theirs ? theirs(config) : config) };
  }
}
